package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/server/servertest"
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
			h, err := server.New(st, server.Config{Calc: predict.New(st, predict.DefaultCacheBytes, nil)})
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

// raceEnvs is raceStores as test environments: the real handler over
// each store, with the spec to validate answers against.
func raceEnvs(t *testing.T) map[string]*env {
	t.Helper()
	out := map[string]*env{}
	for kind, st := range raceStores(t) {
		h, err := server.New(st, server.Config{Calc: predict.New(st, predict.DefaultCacheBytes, nil)})
		if err != nil {
			t.Fatal(err)
		}
		spec, router, err := servertest.Spec()
		if err != nil {
			t.Fatal(err)
		}
		x := &servertest.Env{H: h, St: st, Spec: spec, Router: router, Seeds: map[string]store.Run{}}
		e := &env{Env: x, h: h, st: st, spec: spec, router: router, seeds: x.Seeds}
		out[kind] = e
	}
	return out
}

// raceReq is one request of a race.
type raceReq struct {
	method, target string
	header         http.Header
	body           []byte
}

// race sends reqs at once over real HTTP, and returns their answers, each
// validated against openapi.yaml.
func (e *env) race(t *testing.T, base string, reqs []raceReq) []*httptest.ResponseRecorder {
	t.Helper()
	out := make([]*httptest.ResponseRecorder, len(reqs))
	errs := make([]error, len(reqs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			req, err := http.NewRequest(r.method, base+r.target, bytes.NewReader(r.body))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header = r.header.Clone()
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			rec := httptest.NewRecorder()
			maps.Copy(rec.Header(), resp.Header)
			rec.WriteHeader(resp.StatusCode)
			_, errs[i] = io.Copy(rec.Body, resp.Body)
			out[i] = rec
		})
	}
	close(start)
	wg.Wait()
	for i, r := range reqs {
		if errs[i] != nil {
			t.Fatalf("%s %s: %v", r.method, r.target, errs[i])
		}
		e.validate(t, httptest.NewRequest(r.method, r.target, nil), out[i])
	}
	return out
}

// statuses counts answers by status, and fails the test on any answer
// outside allowed.
func statuses(t *testing.T, what string, recs []*httptest.ResponseRecorder, allowed ...int) map[int]int {
	t.Helper()
	count := map[int]int{}
	for _, rec := range recs {
		count[rec.Code]++
		if !slices.Contains(allowed, rec.Code) {
			t.Errorf("%s: answer %d, want one of %v: %.300s", what, rec.Code, allowed, rec.Body)
		}
	}
	return count
}

// actions is run id's history as its actions, read over HTTP page by page.
func (e *env) actions(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range e.history(t, id) {
		out = append(out, string(ev.Action))
	}
	return out
}

// raceRuns stores n runs submitted by key name on e's store.
func (e *env) raceRuns(t *testing.T, seed uint64, n int, by string) []store.Run {
	t.Helper()
	runs := storetest.Runs(seed, n)
	for i := range runs {
		runs[i].SubmittedBy = by
	}
	stored, _, err := e.st.CreateRuns(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// TestModerationRaces sends the same moderation change many times at
// once, over real HTTP, on both stores: exactly one changes the run and
// writes its event, every other gets the contract's 409 (or 404 once the
// run is deleted), never a 500.
func TestModerationRaces(t *testing.T) {
	for kind, e := range raceEnvs(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			srv := httptest.NewServer(e.h)
			defer srv.Close()
			_, token, err := e.st.CreateKey(ctx, "ops", true)
			if err != nil {
				t.Fatal(err)
			}
			admin := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
			runs := e.raceRuns(t, 700, 3, "ops")
			for _, r := range runs {
				run := "/v1/runs/" + r.ID
				reqs := make([]raceReq, 16)
				for i := range reqs {
					reqs[i] = raceReq{"PUT", run + "/hidden", admin, fmt.Appendf(nil, `{"reason":"race %d"}`, i)}
				}
				if n := statuses(t, "16 hides", e.race(t, srv.URL, reqs), 200, 409); n[200] != 1 || n[409] != 15 {
					t.Errorf("16 hides of %s: %v, want 1 × 200, 15 × 409", r.ID, n)
				}
				reqs = make([]raceReq, 16)
				for i := range reqs {
					reqs[i] = raceReq{"DELETE", run + "/hidden", admin, nil}
				}
				if n := statuses(t, "16 restores", e.race(t, srv.URL, reqs), 200, 409); n[200] != 1 || n[409] != 15 {
					t.Errorf("16 restores of %s: %v, want 1 × 200, 15 × 409", r.ID, n)
				}

				rec := e.send(t, "POST", run+"/flags", admin, []byte(`{"reason":"implausible","text":"too fast"}`))
				if rec.Code != 201 {
					t.Fatalf("flag: %d %s", rec.Code, rec.Body)
				}
				resolution := run + "/flags/" + strconv.FormatInt(decodeJSON[api.Flag](t, rec.Body.Bytes()).ID, 10) + "/resolution"
				reqs = make([]raceReq, 8)
				for i := range reqs {
					reqs[i] = raceReq{"POST", resolution, admin, fmt.Appendf(nil, `{"note":"checked %d"}`, i)}
				}
				if n := statuses(t, "8 resolutions", e.race(t, srv.URL, reqs), 200, 409); n[200] != 1 || n[409] != 7 {
					t.Errorf("8 resolutions of one flag of %s: %v, want 1 × 200, 7 × 409", r.ID, n)
				}

				reqs = make([]raceReq, 8)
				for i := range reqs {
					reqs[i] = raceReq{"DELETE", run, admin, nil}
				}
				if n := statuses(t, "8 deletes", e.race(t, srv.URL, reqs), 204, 404); n[204] != 1 || n[404] != 7 {
					t.Errorf("8 deletes of %s: %v, want 1 × 204, 7 × 404", r.ID, n)
				}
				if got, want := strings.Join(e.actions(t, r.ID), " "), "create hide restore flag resolve delete"; got != want {
					t.Errorf("history of %s: %q, want %q: one event per change", r.ID, got, want)
				}
			}
		})
	}
}

// TestDeleteRaces races a delete with every other change to the run: each
// change the delete overtakes answers 404, none answers 200 after it, and
// the delete is the history's last event.
func TestDeleteRaces(t *testing.T) {
	for kind, e := range raceEnvs(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			srv := httptest.NewServer(e.h)
			defer srv.Close()
			keys := map[string]http.Header{}
			for _, name := range []string{"ops", "alice"} {
				_, token, err := e.st.CreateKey(ctx, name, name == "ops")
				if err != nil {
					t.Fatal(err)
				}
				keys[name] = http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
			}
			patch := with(keys["alice"], "Content-Type", "application/merge-patch+json")
			for i, r := range e.raceRuns(t, 800, 6, "alice") {
				run := "/v1/runs/" + r.ID
				reqs := []raceReq{
					{"DELETE", run, keys["alice"], nil},
					{"DELETE", run, keys["ops"], nil},
				}
				for j := range 4 {
					reqs = append(reqs,
						raceReq{"PATCH", run, patch, fmt.Appendf(nil, `{"notes":"note %d"}`, j)},
						raceReq{"PUT", run + "/hidden", keys["ops"], fmt.Appendf(nil, `{"reason":"race %d"}`, j)},
					)
				}
				reqs = append(reqs, raceReq{"POST", run + "/flags", keys["alice"], []byte(`{"reason":"other","text":"racing a delete"}`)})
				// Reads racing the delete see the run whole or not at all.
				for _, target := range []string{run, run + "/source", run + "/decode", run + "/history"} {
					reqs = append(reqs, raceReq{"GET", target, nil, nil})
				}
				recs := e.race(t, srv.URL, reqs)
				n := statuses(t, fmt.Sprintf("round %d", i), recs, 200, 201, 204, 404, 409, 410)
				if n[204] != 1 {
					t.Errorf("round %d: %d deletes answered 204, want 1", i, n[204])
				}
				acts := e.actions(t, r.ID)
				if len(acts) == 0 || acts[len(acts)-1] != store.ActionDelete || slices.Index(acts, store.ActionDelete) != len(acts)-1 {
					t.Fatalf("round %d: history %v: want one delete, last", i, acts)
				}
				// Every change answered 2xx is in the history, before the delete.
				changed := 0
				for j, rec := range recs {
					if rec.Code/100 == 2 && reqs[j].method != "DELETE" && reqs[j].method != "GET" {
						changed++
					}
				}
				if changed != len(acts)-2 {
					t.Errorf("round %d: %d changes acknowledged, history %v", i, changed, acts)
				}
				for _, req := range reqs[2:] {
					if req.method == "GET" {
						continue
					}
					if rec := e.send(t, req.method, req.target, req.header, req.body); rec.Code != 404 {
						t.Errorf("%s %s on a deleted run: %d, want 404: %s", req.method, req.target, rec.Code, rec.Body)
					}
				}
				if rec := e.send(t, "DELETE", run+"/hidden", keys["ops"], nil); rec.Code != 404 {
					t.Errorf("restore a deleted run: %d, want 404: %s", rec.Code, rec.Body)
				}
				if got := e.actions(t, r.ID); len(got) != len(acts) {
					t.Errorf("round %d: changes refused with 404 wrote events: %v", i, got)
				}
			}
		})
	}
}

// TestEditRaces: edits of different fields sent at once all stay; none is
// lost to another that read the run before it was written.
func TestEditRaces(t *testing.T) {
	for kind, e := range raceEnvs(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			srv := httptest.NewServer(e.h)
			defer srv.Close()
			_, token, err := e.st.CreateKey(ctx, "alice", false)
			if err != nil {
				t.Fatal(err)
			}
			patch := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/merge-patch+json"}}
			for trial, r := range e.raceRuns(t, 600, 10, "alice") {
				run := "/v1/runs/" + r.ID
				title := fmt.Sprintf("edited title %d", trial)
				notes := fmt.Sprintf("edited notes %d", trial)
				src := fmt.Sprintf("https://example.com/runs/%d", trial)
				recs := e.race(t, srv.URL, []raceReq{
					{"PATCH", run, patch, fmt.Appendf(nil, `{"title":%q}`, title)},
					{"PATCH", run, patch, fmt.Appendf(nil, `{"notes":%q}`, notes)},
					{"PATCH", run, patch, fmt.Appendf(nil, `{"source_url":%q}`, src)},
				})
				if n := statuses(t, "3 edits", recs, 200); n[200] != 3 {
					continue
				}
				got := decodeRun(t, e.do(t, "GET", run, nil).Body.Bytes())
				if got.Title != title || got.Notes == nil || *got.Notes != notes || got.SourceURL == nil || *got.SourceURL != src {
					t.Errorf("trial %d: after three acknowledged edits the run reads title %q, notes %v, source_url %v; want all three kept",
						trial, got.Title, strOf(got.Notes), strOf(got.SourceURL))
				}
				if acts := e.actions(t, r.ID); strings.Join(acts, " ") != "create update update update" {
					t.Errorf("trial %d: history %v", trial, acts)
				}
			}
		})
	}
}

func strOf(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// history is run id's whole history, read over HTTP page by page.
func (e *env) history(t *testing.T, id string) []api.RunEvent {
	t.Helper()
	var out []api.RunEvent
	target := "/v1/runs/" + id + "/history?limit=200"
	for {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != 200 {
			t.Fatalf("history of %s: %d %s", id, rec.Code, rec.Body)
		}
		page := decodeJSON[api.RunHistory](t, rec.Body.Bytes())
		out = append(out, page.Items...)
		if page.NextCursor == nil {
			return out
		}
		target = "/v1/runs/" + id + "/history?limit=200&cursor=" + url.QueryEscape(*page.NextCursor)
	}
}
