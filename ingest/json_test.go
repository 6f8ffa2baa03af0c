package ingest

import (
	"encoding/json"
	"errors"
	"github.com/matrixd/matrixd/store"
	"strings"
	"testing"
)

func TestParseRunJSONRoundTrip(t *testing.T) {
	for _, name := range []string{fara, nemotron} {
		t.Run(name, func(t *testing.T) {
			want := mustParse(t, seed(t, name))
			for _, indent := range []bool{false, true} {
				b, err := json.Marshal(want)
				if indent {
					b, err = json.MarshalIndent(want, "", "  ")
				}
				if err != nil {
					t.Fatal(err)
				}
				got, err := ParseRunJSON(b)
				if err != nil {
					t.Fatal(err)
				}
				sameRun(t, got, want)
			}
		})
	}
}

func TestParseRunJSONNulls(t *testing.T) {
	r, err := ParseRunJSON([]byte(`{"title": "t", "model": {"name": "m"}, "hardware": {"gpu": "g", "vram_gb": null},
		"engine": {"name": "e"}, "benchmark": {}, "method": {"class": "sustained_decode", "measurement_s": null}, "launch": {"enable_prefix_caching": null},
		"decode": [{"context_tokens": 0, "concurrency": 1, "status": "over_capacity", "total_tok_s": null, "avg_active_requests": 0.7}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := r.Decode[0]
	if r.Method.MeasurementS != nil {
		t.Errorf("method.measurement_s null became %v", *r.Method.MeasurementS)
	}
	if r.Hardware.VRAMGB != nil || r.Launch.EnablePrefixCaching != nil || c.TotalTokS != nil || c.TTFTMs != nil || *c.AvgActiveRequests != 0.7 {
		t.Fatalf("absent or null values were not left nil: %+v", r)
	}
}

func TestParseRunJSONErrors(t *testing.T) {
	base, err := json.MarshalIndent(mustParse(t, seed(t, nemotron)), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	page := string(base)
	tests := []struct {
		name     string
		in       string
		line     int // -1: the line holding mark
		mark     string
		contains string
	}{
		{"unknown field", strings.Replace(page, `"title"`, `"colour": "red",
  "title"`, 1), -1, `"colour"`, `/colour: is not a field of the run`},
		{"unknown nested field", strings.Replace(page, `"tbt_ms": 10.6,`, `"tbt_ms": 10.6, "energy_j": 5,`, 1), -1, `"energy_j"`, `/decode/0/energy_j: is not a field of decode cells`},
		{"field in another case", strings.Replace(page, `"title"`, `"Title"`, 1), -1, `"Title"`, `/Title: is not a field of the run`},
		{"repeated field", strings.Replace(page, `"title"`, `"title": "x",
  "title"`, 1), -1, `"title": "NVIDIA`, `/title: appears twice`},
		{"id present", strings.Replace(page, `"title"`, `"id": "r1",
  "title"`, 1), -1, `"id"`, "/id: is assigned by the server"},
		{"created_at present", strings.Replace(page, `"title"`, `"created_at": "2026-01-01T00:00:00Z",
  "title"`, 1), -1, `"created_at"`, "/created_at: is assigned by the server"},
		{"bad status", strings.Replace(page, `"status": "requests_queued"`, `"status": "queued"`, 1), -1, `"queued"`, `/decode/7/status: is "queued"; it must be valid`},
		{"null status", strings.Replace(page, `"status": "valid"`, `"status": null`, 1), -1, `null`, `/prefill/0/status: is required; null is not a value`},
		{"string for number", strings.Replace(page, `"total_tok_s": 94.2`, `"total_tok_s": "94.2"`, 1), -1, `"94.2"`, `/decode/0/total_tok_s: want a number, not a string`},
		{"number for string", strings.Replace(page, `"gpu": "RTX 3090"`, `"gpu": 3090`, 1), -1, `3090,`, `/hardware/gpu: want a string, not a number`},
		{"fraction for whole number", strings.Replace(page, `"concurrency": 2,`, `"concurrency": 2.5,`, 1), -1, `2.5`, `/decode/1/concurrency: want a whole number, not 2.5`},
		{"negative number", strings.Replace(page, `"vram_gb": 24`, `"vram_gb": -24`, 1), -1, `-24`, `/hardware/vram_gb: is -24; it must be above 0`},
		{"huge number", strings.Replace(page, `"vram_gb": 24`, `"vram_gb": 1e999`, 1), -1, `1e999`, `/hardware/vram_gb: 1e999 is out of range`},
		{"object for array", strings.Replace(page, `"notes": [`, `"notes": {"a": 1}, "x": [`, 1), -1, `"notes"`, `/launch/notes: want an array, not an object`},
		{"flag value not a string", strings.Replace(page, `"max-num-seqs": "128"`, `"max-num-seqs": 128`, 1), -1, `"max-num-seqs"`, `/launch/flags/max-num-seqs: want a string, not a number`},
		{"trailing garbage", page + "\n\ngarbage!", -1, "garbage!", "unexpected data after the run object"},
		{"second object", page + "\n{\"title\": \"again\"}", -1, `"again"`, "unexpected data after the run object"},
		{"syntax error", strings.Replace(page, `"gpu": "RTX 3090",`, `"gpu": "RTX 3090",,`, 1), -1, `"gpu"`, "invalid JSON"},
		{"truncated", page[:len(page)/2], 0, "", "the JSON ends early"},
		{"not an object", `["title"]`, 1, "", "the run must be a JSON object, not an array"},
		{"null", `null`, 1, "", "the run must be a JSON object, not null"},
		{"fails Validate", `{"title": "t", "model": {"name": "m"}, "hardware": {}, "engine": {"name": "e"}}`, 1, "", "/hardware/gpu: is required"},
		{"null context", strings.Replace(page, `"context_tokens": 0,`, `"context_tokens": null,`, 1), -1, `"context_tokens": null`, `/decode/0/context_tokens: is required; null is not a value`},
		{"NaN far down", strings.Replace(page, `"tbt_ms": 10.6,`, `"tbt_ms": NaN,`, 1), -1, `NaN`, "invalid JSON"},
		{"value on a later line", `{"title":
` + "\n\n" + ` x}`, 4, "", "invalid JSON"},
		{"invalid UTF-8", strings.Replace(page, "RTX 3090", "RTX \xff", 1), -1, "RTX \xff", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRunJSON([]byte(tt.in))
			want := tt.line
			switch {
			case want == -1:
				want = lineOf(t, tt.in, tt.mark)
			case tt.name == "truncated":
				want = strings.Count(tt.in, "\n") + 1
			}
			var pe *ParseError
			var ve *store.ValidationError
			switch {
			case errors.As(err, &pe):
				if pe.Line != want || !strings.Contains(pe.Msg, tt.contains) {
					t.Fatalf("got %q\nwant line %d containing %q", err, want, tt.contains)
				}
			case errors.As(err, &ve):
				for _, p := range ve.Problems {
					if p.Line == want && strings.Contains(p.Pointer+": "+p.Message, tt.contains) {
						return
					}
				}
				t.Fatalf("got %q\nwant a problem on line %d containing %q", err, want, tt.contains)
			default:
				t.Fatalf("got %v, want a *ParseError or a *store.ValidationError", err)
			}
		})
	}
}
