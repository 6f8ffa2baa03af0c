package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// raceStores opens an empty store of each kind the machine has: SQLite
// always, PostgreSQL where MATRIXD_TEST_POSTGRES names a server (CI).
func raceStores(t *testing.T) map[string]*store.Store {
	t.Helper()
	out := map[string]*store.Store{}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "matrixd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	out["sqlite"] = st
	if pg := os.Getenv("MATRIXD_TEST_POSTGRES"); pg != "" {
		out["postgres"] = storetest.Postgres(t, pg, store.Options{})
	} else if os.Getenv("CI") != "" {
		t.Fatal("MATRIXD_TEST_POSTGRES is not set: CI must run the write races on PostgreSQL too")
	}
	return out
}

// post16 sends the 16 bodies at once, each with header, and returns the
// statuses and bodies.
func post16(t *testing.T, url string, header http.Header, bodies [][]byte) ([]int, []string) {
	t.Helper()
	codes, texts := make([]int, len(bodies)), make([]string, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url+"/v1/runs", bytes.NewReader(b))
			req.Header = header.Clone()
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				texts[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			codes[i], texts[i] = resp.StatusCode, buf.String()
		})
	}
	close(start)
	wg.Wait()
	return codes, texts
}

// TestWriteRaces sends 16 submissions at once, over real HTTP, on both
// stores: the database decides which one stores, and every other gets the
// contract's answer, never a 500.
func TestWriteRaces(t *testing.T) {
	for kind, st := range raceStores(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			h, err := server.New(st, server.Config{})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			_, token, err := st.CreateKey(ctx, "racer", false)
			if err != nil {
				t.Fatal(err)
			}
			header := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
			for round := range 4 {
				runs := storetest.Runs(uint64(900+round), 17)
				before, _ := st.CountRuns(ctx)

				// One Idempotency-Key, 16 different bodies: one is stored.
				bodies := make([][]byte, 16)
				for i := range bodies {
					bodies[i] = runJSON(t, runs[i])
				}
				keyed := header.Clone()
				keyed.Set("Idempotency-Key", "race-"+kind+"-"+string(rune('a'+round)))
				codes, texts := post16(t, srv.URL, keyed, bodies)
				count := map[int]int{}
				for i, c := range codes {
					count[c]++
					if c != 201 && c != 409 {
						t.Errorf("round %d, same key: answer %d: %.300s", round, c, texts[i])
					}
				}
				after, _ := st.CountRuns(ctx)
				if count[201] != 1 || count[409] != 15 || after != before+1 {
					t.Errorf("round %d, same key, 16 bodies: statuses %v, %d runs stored; want 1 × 201, 15 × 409, 1 run", round, count, after-before)
				}

				// One body, 16 times, no key: one 201, fifteen 200.
				same := make([][]byte, 16)
				for i := range same {
					same[i] = runJSON(t, runs[16])
				}
				codes, texts = post16(t, srv.URL, header, same)
				count = map[int]int{}
				for i, c := range codes {
					count[c]++
					if c != 201 && c != 200 {
						t.Errorf("round %d, same body: answer %d: %.300s", round, c, texts[i])
					}
				}
				if final, _ := st.CountRuns(ctx); count[201] != 1 || count[200] != 15 || final != after+1 {
					t.Errorf("round %d, one body 16 times: statuses %v, %d runs stored; want 1 × 201, 15 × 200, 1 run", round, count, final-after)
				}
			}
		})
	}
}
