package server_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// largestRun is a run with the largest decode grid a run may have.
func largestRun() store.Run {
	r := storetest.Runs(64, 1)[0]
	cell := r.Decode[0]
	r.Decode = r.Decode[:0]
	for i := range store.MaxContexts {
		for j := range store.MaxConcurrencies {
			c := cell
			c.ContextTokens, c.Concurrency = i*2048, j+1
			r.Decode = append(r.Decode, c)
		}
	}
	return r
}

// BenchmarkSubmitLargestInvalidRun is the cost of refusing the largest run
// a client may send: a 64 × 64 grid, invalid for want of a title.
func BenchmarkSubmitLargestInvalidRun(b *testing.B) {
	e := newEnv(b, 0)
	k := e.keys(b, "bench")
	r := largestRun()
	r.Title = ""
	r.ID, r.SubmittedBy = "", ""
	body, err := json.Marshal(r) // compact: indented, the largest grid is over the body limit
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/runs", bytes.NewReader(body))
		req.Header = k["bench"].Clone()
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != 422 {
			b.Fatalf("%d %.300s", rec.Code, rec.Body)
		}
	}
}
