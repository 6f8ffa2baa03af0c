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
		b.Run(bm.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bm.target, nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", bm.target, rec.Code, rec.Body)
				}
			}
		})
	}
}
