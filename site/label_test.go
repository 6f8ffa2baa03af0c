package site_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// TestToolClassLabel: a run whose benchmark.tool implies a method class
// (llama-batched-bench measures a batched burst) and whose method.class
// says another is refused with a 422 problem naming both fields, and is
// not ranked; the same run labelled with the tool's class is stored.
func TestToolClassLabel(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	relabelled := fara
	relabelled.Title = "a burst labelled sustained"
	relabelled.Benchmark.Tool = "llama-batched-bench"
	relabelled.Method = &store.Method{Class: store.MethodSustainedDecode, MeasurementS: new(30.0), Prefill: store.PrefillExcluded}
	rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, relabelled))
	body := rec.Body.String()
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(body, `"pointer":"/method/class"`) ||
		!strings.Contains(body, "benchmark.tool") || !strings.Contains(body, "llama-batched-bench") || !strings.Contains(body, "batched_burst") {
		t.Fatalf("a llama-batched-bench run labelled sustained_decode: %d %s, want a 422 at /method/class naming benchmark.tool and batched_burst", rec.Code, body)
	}
	if rec := e.do(t, http.MethodGet, "/v1/leaderboard?context_tokens=0&concurrency=1", nil); strings.Contains(rec.Body.String(), "a burst labelled sustained") {
		t.Errorf("the refused run is ranked: %s", rec.Body)
	}
	relabelled.Method = &store.Method{Class: store.MethodBatchedBurst, OutputTokensPerRequest: new(32), Prefill: store.PrefillExcluded}
	relabelled.Title = "a burst labelled a burst"
	postRun(t, e, k["alice"], relabelled, http.StatusCreated)
}
