package ingest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

const minimalPage = `Speed test matrix
M on G
e · 1 · Q1 context (0) × 2 concurrency levels (1–2)
Hardware
GPU
G
All measurements
PhaseContextRequests at onceStatusTotal tok/sOutput tokensMeasured for
Sustained decode01Valid30.0301.0 s
Sustained decode02Over capacity——1.0 s
`

// checkResult holds any parse to the package's promises: errors are
// *ParseErrors or *store.ValidationErrors whose problems each say where and
// what, and a run returned is valid and survives the API format.
func checkResult(t *testing.T, r store.Run, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		var ve *store.ValidationError
		switch {
		case errors.As(err, &pe):
		case errors.As(err, &ve):
			if len(ve.Problems) == 0 {
				t.Fatal("a ValidationError without problems")
			}
			for _, p := range ve.Problems {
				if p.Message == "" || (p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/")) {
					t.Fatalf("problem %+v: want a JSON Pointer and a message", p)
				}
			}
		default:
			t.Fatalf("error %v (%T) is neither a *ParseError nor a *store.ValidationError", err, err)
		}
		return
	}
	if err := r.Validate(); err != nil {
		t.Fatalf("returned run fails Validate: %v", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseRunJSON(b)
	if err != nil {
		t.Fatalf("returned run is not valid API JSON: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(again, r) {
		t.Fatalf("run changed through the API format:\n%s", b)
	}
}

func FuzzParsePage(f *testing.F) {
	for _, name := range []string{fara, nemotron} {
		b := seed(f, name)
		f.Add(b)
		f.Add([]byte(toText(string(b))))
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(toMarkdown(string(seed(f, nemotron)), golden(f, nemotron))))
	f.Add([]byte(minimalPage))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParsePage(b)
		checkResult(t, r, err)
	})
}

func FuzzParseRunJSON(f *testing.F) {
	for _, name := range []string{fara, nemotron} {
		b, err := json.Marshal(golden(f, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"title":"t","model":{"name":"m"},"hardware":{"gpu":"g"},"engine":{"name":"e"},"decode":[{"context_tokens":0,"concurrency":1,"status":"valid","total_tok_s":1.5}]}`))
	f.Add([]byte(`{"title":"t","id":"x"}`))
	f.Add([]byte(`{"launch":{"flags":{"a":"b","a":"c"}}} x`))
	f.Add([]byte(`[1, null, "s"]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRunJSON(b)
		checkResult(t, r, err)
	})
}

func TestParsePageMinimal(t *testing.T) {
	r := mustParse(t, []byte(minimalPage))
	want := store.Run{
		Title:    "M on G",
		Model:    store.Model{Name: "M", Quantization: "Q"},
		Hardware: store.Hardware{GPU: "G"},
		Engine:   store.Engine{Name: "e", Version: "1", Quantization: "Q"},
		// A page is a sustained-decode grid even when its Run section is cut.
		Method: &store.Method{Class: store.MethodSustainedDecode, Prefill: store.PrefillExcluded},
		Decode: []store.DecodeCell{
			{Concurrency: 1, Status: store.StatusValid, TotalTokS: f64(30), OutputTokens: intp(30), DurationS: f64(1)},
			{Concurrency: 2, Status: store.StatusOverCapacity, DurationS: f64(1)},
		},
	}
	sameRun(t, r, want)
}
