package server_test

import (
	"bytes"
	"encoding/json"
	"math"
	"mime/multipart"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/matrixd/matrixd/api"
)

// seriesDir holds published re-measurements of one configuration at
// several engine builds (SOURCES.md there names each).
var seriesDir = filepath.Join("..", "ingest", "testdata", "series")

// seriesEntry is one run of seriesDir's manifest.json.
type seriesEntry struct {
	Name   string   `json:"name"`
	Format string   `json:"format"`
	Files  []string `json:"files"`
	Meta   string   `json:"meta"`
	Source string   `json:"source"`
}

// importSeries imports every run of seriesDir through POST
// /v1/runs/import, as a submitter would, and returns their ids by name.
func (e *env) importSeries(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(seriesDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []seriesEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	k := e.keys(t, "series")
	ids := map[string]string{}
	for _, en := range entries {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for _, part := range append([]string{en.Meta}, en.Files...) {
			data, err := os.ReadFile(filepath.Join(seriesDir, part))
			if err != nil {
				t.Fatal(err)
			}
			var pw interface{ Write([]byte) (int, error) }
			if part == en.Meta {
				pw, err = w.CreateFormField("meta")
			} else {
				pw, err = w.CreateFormFile("file", part)
			}
			if err != nil {
				t.Fatal(err)
			}
			pw.Write(data)
		}
		w.Close()
		rec := e.send(t, "POST", "/v1/runs/import?format="+en.Format, with(k["series"], "Content-Type", w.FormDataContentType()), buf.Bytes())
		if rec.Code != 201 {
			t.Fatalf("import %s: %d %.500s", en.Name, rec.Code, rec.Body)
		}
		ids[en.Name] = decodeRun(t, rec.Body.Bytes()).ID
	}
	return ids
}

// TestRealSeries lines up llama.cpp's own DGX Spark tables, re-measured at
// builds 6918, 6989 and 7941 (ingest/testdata/series/SOURCES.md), through
// the real handlers, and checks each step's verdict against what the
// tables show by hand: Qwen2.5-Coder-7B 3–5 % faster at every cell from
// 6918 to 6989 and 3–8 % slower at every cell from 6989 to 7941;
// gpt-oss-120b 19–22 % faster at B = 2 and 3–14 % at B ≥ 4 at 7941, but
// not at B = 1, so only the row whose B = 1 cell also rose (8192) passes
// the sign test; the others change unevenly and are inconclusive.
func TestRealSeries(t *testing.T) {
	e := newEnv(t, 0)
	ids := e.importSeries(t)
	type want struct {
		verdict             api.Verdict
		regressed, improved []int
	}
	all := []int{512, 4096, 8192}
	tests := []struct {
		model string
		steps [2]want // b6918 → b6989, b6989 → b7941
	}{
		{"qwen2.5-coder-7b", [2]want{{api.Improved, nil, all}, {api.Regressed, all, nil}}},
		{"gpt-oss-120b", [2]want{{api.Unchanged, nil, nil}, {api.Improved, nil, []int{8192}}}},
		{"gpt-oss-20b", [2]want{{api.Unchanged, nil, nil}, {api.Inconclusive, nil, nil}}},
		{"qwen3-coder-30b-a3b", [2]want{{api.Inconclusive, nil, nil}, {api.Inconclusive, nil, nil}}},
		{"gemma-3-4b-qat", [2]want{{api.Inconclusive, nil, nil}, {api.Inconclusive, nil, nil}}},
	}
	for _, tt := range tests {
		s := e.runSeries(t, ids["dgx-spark-"+tt.model+"-b7941"])
		var versions []string
		for _, r := range s.Runs {
			versions = append(versions, *r.EngineVersion)
		}
		// Build 7941 prints is_tg_separate = 0, the older builds nothing: one series.
		if !slices.Equal(versions, []string{"b6918", "b6989", "b7941"}) || len(s.Steps) != 2 {
			t.Errorf("%s: series %v with %d steps; want b6918, b6989, b7941 and 2 steps", tt.model, versions, len(s.Steps))
			continue
		}
		for i, w := range tt.steps {
			st := s.Steps[i]
			if st.Verdict != w.verdict || !slices.Equal(st.RegressedRows, nonNil(w.regressed)) || !slices.Equal(st.ImprovedRows, nonNil(w.improved)) {
				t.Errorf("%s step %d: %s, regressed %v, improved %v (%s); want %s, regressed %v, improved %v",
					tt.model, i+1, st.Verdict, st.RegressedRows, st.ImprovedRows, st.Why, w.verdict, w.regressed, w.improved)
			}
			if st.NoiseFloor.Basis != api.StepScatter || st.MeasuredCells != 18 || len(st.SettingsDiffer) != 0 {
				t.Errorf("%s step %d: noise floor %s, %d cells measured, settings differ %v; want the step's scatter over the 18 shared cells, no settings", tt.model, i+1, st.NoiseFloor.Basis, st.MeasuredCells, st.SettingsDiffer)
			}
		}
	}

	// By hand from the tables: Qwen2.5-Coder-7B S_TG at 7941 over 6989 is
	// 0.919 (PP 8192, B 8: 132.13 / 143.74) to 0.967 (PP 512, B 16:
	// 331.90 / 343.16); gpt-oss-120b at B 2 is 1.192, 1.218 and 1.200.
	s := e.runSeries(t, ids["dgx-spark-qwen2.5-coder-7b-b7941"])
	for _, c := range s.Steps[1].Cells {
		if c.Ratio < 0.919-1e-3 || c.Ratio > 0.967+1e-3 || c.Verdict != api.Regressed {
			t.Errorf("Qwen2.5-Coder-7B 6989 → 7941 at PP %d, B %d: ratio %.4f %s; want 0.919–0.967, regressed", c.ContextTokens, c.Concurrency, c.Ratio, c.Verdict)
		}
	}
	s = e.runSeries(t, ids["dgx-spark-gpt-oss-120b-b7941"])
	var b2 []float64
	for _, c := range s.Steps[1].Cells {
		if c.Concurrency == 2 {
			b2 = append(b2, math.Round(c.Ratio*1000)/1000)
		}
	}
	if !slices.Equal(b2, []float64{1.192, 1.218, 1.200}) {
		t.Errorf("gpt-oss-120b 6989 → 7941 at B 2: ratios %v; want 1.192, 1.218, 1.200", b2)
	}

	rec := e.do(t, "GET", "/v1/series?model=Qwen2.5-Coder-7B", nil)
	var list api.SeriesList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list.Series) != 1 || list.Series[0].Runs != 3 {
		t.Errorf("GET /v1/series?model=Qwen2.5-Coder-7B: %d %.300s; want its one series of 3 runs", rec.Code, rec.Body)
	}
}

func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}
