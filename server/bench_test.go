package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// BenchmarkAPI10k measures reads on a store of 10,000 generated runs (plus
// the two seeds), through the real handler chain. Healthz is the baseline:
// the same chain with no database work.
//
//	go test ./server -run '^$' -bench API10k -benchtime 2s -count 6
func BenchmarkAPI10k(b *testing.B) {
	e := newEnv(b, 10000)
	list, _, err := e.st.ListRuns(context.Background(), store.RunFilter{}, store.SortCreatedDesc, 1, "")
	if err != nil || len(list) == 0 {
		b.Fatal(err)
	}
	id := list[0].ID
	for _, bm := range []struct{ name, target string }{
		{"Healthz", "/healthz"},
		{"GetRun", "/v1/runs/" + id},
		{"ListRunsFiltered", "/v1/runs?gpu=RTX%203090&vram_gb_min=16&sort=-peak_total_tok_s&limit=50"},
		{"ListRunsModelSubstring", "/v1/runs?model=qwen3&limit=50"},
		{"Leaderboard", "/v1/leaderboard?context_tokens=16384&concurrency=8&metric=total_tok_s&limit=50"},
		{"LeaderboardFiltered", "/v1/leaderboard?context_tokens=32768&concurrency=4&gpu=H100&limit=50"},
	} {
		b.Run(bm.name, func(b *testing.B) { benchGet(b, e, bm.target) })
	}
}

// BenchmarkCalculatorHTTP measures calculator answers through the handler
// chain once the run's fit is cached (the first request fits it).
//
//	go test ./server -run '^$' -bench CalculatorHTTP -count 6
func BenchmarkCalculatorHTTP(b *testing.B) {
	e := newEnv(b, 0)
	id := e.seeds["fara1.5-4b-autoround-rtx3060"].ID
	for _, bm := range []struct{ name, target string }{
		{"Healthz", "/healthz"},
		{"DecodeInterpolated", "/v1/calculator/decode?run_id=" + id + "&context_tokens=49152&concurrency=6"},
		{"DecodeByModelAndGPU", "/v1/calculator/decode?model=fara&gpu=RTX%203060&context_tokens=49152&concurrency=6"},
		{"Grid6x8", "/v1/calculator/grid?run_id=" + id + "&contexts=4096,12288,24576,49152,81920,102400&concurrencies=1,3,6,12,24,48,96,128"},
	} {
		b.Run(bm.name, func(b *testing.B) { benchGet(b, e, bm.target) })
	}
}

// benchGet sends one GET through the handler chain per iteration.
func benchGet(b *testing.B, e *env, target string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
	}
}
