package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// rows counts the rows of every table of the database, read from the file
// itself, so that a test can say a rejected write stored nothing anywhere.
func (e *env) rows(t testing.TB) map[string]int {
	t.Helper()
	driver, dsn, list := "sqlite", "file:"+e.path+"?mode=ro", "SELECT name FROM sqlite_master WHERE type = 'table'"
	if store.IsPostgres(e.path) {
		driver, list = "pgx", "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
		dsn = e.path
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names, err := db.Query(list)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for names.Next() {
		var n string
		if err := names.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	names.Close()
	out := map[string]int{}
	for _, tbl := range tables {
		if tbl == "run_fits" {
			continue // fits of accepted runs, made in the background whenever they are done
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM "` + tbl + `"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tbl] = n
	}
	return out
}

func (e *env) sameRows(t testing.TB, before map[string]int) {
	t.Helper()
	after := e.rows(t)
	for tbl, n := range before {
		if tbl == "api_keys" {
			continue // last_used_at may change; the count may not
		}
		if after[tbl] != n {
			t.Errorf("table %s has %d rows after a rejected write, %d before", tbl, after[tbl], n)
		}
	}
}

func decodeRun(t testing.TB, body []byte) api.Run {
	t.Helper()
	var r api.Run
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("body is not a run: %v\n%s", err, body)
	}
	return r
}

func TestSubmitRun(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "bob")
	fresh := storetest.Runs(42, 2)
	body := runJSON(t, fresh[0])

	t.Run("created", func(t *testing.T) {
		before := e.rows(t)
		rec := e.send(t, "POST", "/v1/runs", k["alice"], body)
		if rec.Code != 201 {
			t.Fatalf("status %d, want 201: %s", rec.Code, rec.Body)
		}
		r := decodeRun(t, rec.Body.Bytes())
		if loc := rec.Header().Get("Location"); loc != "/v1/runs/"+r.ID {
			t.Errorf("Location %q, want /v1/runs/%s", loc, r.ID)
		}
		if r.SubmittedBy == nil || *r.SubmittedBy != "alice" || len(r.Decode) != len(fresh[0].Decode) {
			t.Errorf("submitted_by %v, %d decode cells; want alice, %d", r.SubmittedBy, len(r.Decode), len(fresh[0].Decode))
		}
		if after := e.rows(t); after["runs"] != before["runs"]+1 || after["decode_cells"] != before["decode_cells"]+len(fresh[0].Decode) {
			t.Errorf("rows %v after, %v before: want one more run with its cells", after, before)
		}
		got := e.do(t, "GET", "/v1/runs/"+r.ID, nil)
		if got.Code != 200 || !strings.Contains(got.Body.String(), `"submitted_by":"alice"`) {
			t.Errorf("GET after POST: %d %.300s", got.Code, got.Body)
		}
		mine := e.do(t, "GET", "/v1/runs?submitted_by=alice", nil)
		if !strings.Contains(mine.Body.String(), r.ID) || strings.Count(mine.Body.String(), `"id":`) != 1 {
			t.Errorf("submitted_by=alice lists %.300s; want the one run", mine.Body)
		}
		if bobs := e.do(t, "GET", "/v1/runs?submitted_by=bob", nil); !strings.Contains(bobs.Body.String(), `"items":[]`) {
			t.Errorf("submitted_by=bob lists %.300s; want none", bobs.Body)
		}
	})
	t.Run("the auth scheme is case-insensitive", func(t *testing.T) {
		rec := e.send(t, "POST", "/v1/runs", with(k["alice"], "Authorization", strings.Replace(k["alice"].Get("Authorization"), "Bearer", "bearer", 1)), body)
		if rec.Code != 200 {
			t.Errorf("lower-case bearer: %d %s; want 200 (stored already)", rec.Code, rec.Body)
		}
	})
	t.Run("same content is not stored twice", func(t *testing.T) {
		before := e.rows(t)
		retitled := fresh[0]
		retitled.Title = "another title for the same measurements"
		rec := e.send(t, "POST", "/v1/runs", k["bob"], runJSON(t, retitled))
		if rec.Code != 200 {
			t.Fatalf("status %d, want 200 (already stored): %s", rec.Code, rec.Body)
		}
		if r := decodeRun(t, rec.Body.Bytes()); *r.SubmittedBy != "alice" || r.Title != fresh[0].Title {
			t.Errorf("answered %v %q, want alice's stored run", r.SubmittedBy, r.Title)
		}
		e.sameRows(t, before)
	})
}

func TestSubmitRejectsAndStoresNothing(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "gone")
	if _, err := e.st.RevokeKey(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	good := runJSON(t, storetest.Runs(43, 1)[0])
	// Three problems at once: a cell without concurrency, a string for a
	// number, and per-request speed that is not 1000 / TBT.
	var doc map[string]any
	if err := json.Unmarshal(good, &doc); err != nil {
		t.Fatal(err)
	}
	cells := doc["decode"].([]any)
	delete(cells[3].(map[string]any), "concurrency")
	cells[0].(map[string]any)["total_tok_s"] = "fast"
	cells[1].(map[string]any)["per_request_tok_s"] = 1e6
	several, _ := json.MarshalIndent(doc, "", "  ")

	alice := k["alice"]
	tests := []struct {
		name       string
		header     http.Header
		body       []byte
		wantStatus int
		want       []string
	}{
		{"no key", http.Header{"Content-Type": {"application/json"}}, good, 401, []string{"needs a valid API key"}},
		{"not a bearer token", with(alice, "Authorization", "Basic YWxpY2U6cHc="), good, 401, []string{"needs a valid API key"}},
		{"wrong key", with(alice, "Authorization", "Bearer mxd_aaaaaaaaaaaaa_"+strings.Repeat("a", 52)), good, 401, []string{"needs a valid API key"}},
		{"revoked key", k["gone"], good, 401, []string{"needs a valid API key"}},
		{"several problems", alice, several, 422, []string{
			`{"pointer":"/decode/3/concurrency","line":49,"message":"is required"}`,
			`"pointer":"/decode/0/total_tok_s","line":20,"message":"want a number, not a string"`,
			`"pointer":"/decode/1/per_request_tok_s"`, "1000 / tbt_ms"}},
		{"unknown field", alice, bytes.Replace(good, []byte(`"title"`), []byte(`"colour": "red", "title"`), 1), 422, []string{`"pointer":"/colour"`, `"line":2`}},
		{"server-assigned field", alice, bytes.Replace(good, []byte(`"title"`), []byte(`"submitted_by": "mallory", "title"`), 1), 422, []string{`"pointer":"/submitted_by"`, "assigned by the server"}},
		{"malformed JSON", alice, good[:len(good)/2], 400, []string{"the JSON ends early"}},
		{"trailing data", alice, append(bytes.Clone(good), []byte(" {}")...), 400, []string{"unexpected data after the run object"}},
		{"empty body", alice, nil, 400, []string{"ends early"}},
		{"wrong content type", with(alice, "Content-Type", "text/plain"), good, 415, []string{"Content-Type text/plain is not taken here; send application/json"}},
		{"too large", alice, append(bytes.Clone(good[:len(good)-2]), []byte(`,"notes":"`+strings.Repeat("x", 1<<20)+`"}`)...), 413, []string{"larger than the limit"}},
		{"bad idempotency key", with(alice, "Idempotency-Key", "has spaces in it"), good, 400, []string{`"field":"Idempotency-Key"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.rows(t)
			rec := e.send(t, "POST", "/v1/runs", tt.header, tt.body)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.600s", rec.Code, tt.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
			for _, w := range tt.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body lacks %s\n%.1500s", w, rec.Body)
				}
			}
			if tt.wantStatus == 401 && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			e.sameRows(t, before)
		})
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "bob")
	runs := storetest.Runs(44, 2)
	first := e.send(t, "POST", "/v1/runs", with(k["alice"], "Idempotency-Key", "upload-1"), runJSON(t, runs[0]))
	if first.Code != 201 {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	id := decodeRun(t, first.Body.Bytes()).ID
	before := e.rows(t)

	replay := e.send(t, "POST", "/v1/runs", with(k["alice"], "Idempotency-Key", "upload-1"), runJSON(t, runs[0]))
	if replay.Code != 201 || replay.Header().Get("Idempotent-Replayed") != "true" || decodeRun(t, replay.Body.Bytes()).ID != id {
		t.Errorf("replay: %d replayed=%q; want 201, true, the same run", replay.Code, replay.Header().Get("Idempotent-Replayed"))
	}
	other := e.send(t, "POST", "/v1/runs", with(k["alice"], "Idempotency-Key", "upload-1"), runJSON(t, runs[1]))
	if other.Code != 409 || !strings.Contains(other.Body.String(), "was used for another request") {
		t.Errorf("same key, other body: %d %s; want 409", other.Code, other.Body)
	}
	e.sameRows(t, before)

	// A replay whose run was deleted since says so.
	if rec := e.send(t, "DELETE", "/v1/runs/"+id, k["alice"], nil); rec.Code != 204 {
		t.Fatal(rec.Code)
	}
	gone := e.send(t, "POST", "/v1/runs", with(k["alice"], "Idempotency-Key", "upload-1"), runJSON(t, runs[0]))
	if gone.Code != 404 || !strings.Contains(gone.Body.String(), "deleted since") {
		t.Errorf("replay after delete: %d %s; want 404", gone.Code, gone.Body)
	}

	// Idempotency keys belong to their API key.
	bobs := e.send(t, "POST", "/v1/runs", with(k["bob"], "Idempotency-Key", "upload-1"), runJSON(t, runs[1]))
	if bobs.Code != 201 {
		t.Errorf("bob's upload-1: %d %s; want 201", bobs.Code, bobs.Body)
	}
}

func TestPatchAndDeleteRights(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "bob", "admin")
	rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, storetest.Runs(45, 1)[0]))
	if rec.Code != 201 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	id := decodeRun(t, rec.Body.Bytes()).ID
	seeded := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	patch := func(key string) http.Header { return with(k[key], "Content-Type", "application/merge-patch+json") }

	tests := []struct {
		name       string
		method     string
		target     string
		header     http.Header
		body       string
		wantStatus int
		want       string
	}{
		{"patch without key", "PATCH", "/v1/runs/" + id, http.Header{"Content-Type": {"application/merge-patch+json"}}, `{"title":"x"}`, 401, "API key"},
		{"patch by another key", "PATCH", "/v1/runs/" + id, patch("bob"), `{"title":"bob's"}`, 403, "only its submitter or an admin"},
		{"patch a measurement", "PATCH", "/v1/runs/" + id, patch("alice"), `{"decode":[]}`, 422, `"pointer":"/decode"`},
		{"patch removes the title", "PATCH", "/v1/runs/" + id, patch("alice"), `{"title":null}`, 422, "cannot be removed"},
		{"patch with a bad url", "PATCH", "/v1/runs/" + id, patch("alice"), `{"source_url":"ftp://x"}`, 422, `"pointer":"/source_url"`},
		{"patch as plain JSON", "PATCH", "/v1/runs/" + id, k["alice"], `{"title":"x"}`, 415, "application/merge-patch+json"},
		{"patch not JSON", "PATCH", "/v1/runs/" + id, patch("alice"), `title=x`, 400, "merge patch"},
		{"patch unknown run", "PATCH", "/v1/runs/rnothere", patch("admin"), `{"title":"x"}`, 404, "rnothere does not exist"},
		{"patch by the owner", "PATCH", "/v1/runs/" + id, patch("alice"), `{"title":"Renamed","notes":"re-run with a new driver"}`, 200, `"title":"Renamed"`},
		{"patch by an admin", "PATCH", "/v1/runs/" + id, patch("admin"), `{"notes":null,"source_url":"https://example.com/run"}`, 200, `"notes":null`},
		{"delete a seeded run, not admin", "DELETE", "/v1/runs/" + seeded, k["alice"], "", 403, "only its submitter or an admin"},
		{"delete by another key", "DELETE", "/v1/runs/" + id, k["bob"], "", 403, "only its submitter"},
		{"delete without key", "DELETE", "/v1/runs/" + id, nil, "", 401, "API key"},
		{"delete by the owner", "DELETE", "/v1/runs/" + id, k["alice"], "", 204, ""},
		{"deleted is gone", "GET", "/v1/runs/" + id, nil, "", 404, "does not exist"},
		{"delete again", "DELETE", "/v1/runs/" + id, k["alice"], "", 404, "does not exist"},
		{"admin deletes a seeded run", "DELETE", "/v1/runs/" + seeded, k["admin"], "", 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.rows(t)
			rec := e.send(t, tt.method, tt.target, tt.header, []byte(tt.body))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.500s", rec.Code, tt.wantStatus, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("body lacks %s: %.800s", tt.want, rec.Body)
			}
			if rec.Code >= 400 {
				e.sameRows(t, before)
			}
		})
	}
	got := e.do(t, "GET", "/v1/runs/"+e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID, nil)
	if got.Code != 200 {
		t.Errorf("the other seed run is gone: %d", got.Code)
	}
}

func TestPatchKeepsID(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	r := storetest.Runs(46, 1)[0]
	rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, r))
	id := decodeRun(t, rec.Body.Bytes()).ID
	rec = e.send(t, "PATCH", "/v1/runs/"+id, with(k["alice"], "Content-Type", "application/merge-patch+json"), []byte(`{"title":"fixed typo"}`))
	if rec.Code != 200 || decodeRun(t, rec.Body.Bytes()).ID != id {
		t.Fatalf("patch: %d %s", rec.Code, rec.Body)
	}
	// Submitting the original again finds the patched run.
	again := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, r))
	if got := decodeRun(t, again.Body.Bytes()); again.Code != 200 || got.ID != id || got.Title != "fixed typo" {
		t.Errorf("resubmit after patch: %d id %s title %q; want 200, %s, the patched title", again.Code, got.ID, got.Title, id)
	}
}

func TestImportPage(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "admin")
	seed := ingest.Seeds()[0]
	id := e.seed(t, seed.Name).ID
	text := with(k["alice"], "Content-Type", "text/plain; charset=utf-8")

	exists := e.send(t, "POST", "/v1/runs/import", text, seed.Data)
	if exists.Code != 200 || decodeRun(t, exists.Body.Bytes()).ID != id {
		t.Fatalf("import of a stored page: %d %.300s; want 200 and run %s", exists.Code, exists.Body, id)
	}
	if rec := e.send(t, "DELETE", "/v1/runs/"+id, k["admin"], nil); rec.Code != 204 {
		t.Fatal(rec.Code)
	}
	created := e.send(t, "POST", "/v1/runs/import?format=page", text, seed.Data)
	if created.Code != 201 {
		t.Fatalf("import: %d %.500s", created.Code, created.Body)
	}
	r := decodeRun(t, created.Body.Bytes())
	if r.ID != id || *r.SubmittedBy != "alice" {
		t.Errorf("imported %s by %v; want %s by alice", r.ID, r.SubmittedBy, id)
	}

	before := e.rows(t)
	broken := bytes.Replace(seed.Data, []byte("| 32.0 ms | 8.0 | 0 | 8,368 |"), []byte("| 32.0 ms | 9.0 | 0 | 8,368 |"), 1)
	if bytes.Equal(broken, seed.Data) {
		t.Fatal("the seed page changed: the test's edit no longer applies")
	}
	bad := e.send(t, "POST", "/v1/runs/import", text, broken)
	if bad.Code != 422 || !strings.Contains(bad.Body.String(), `"line":`) || !strings.Contains(bad.Body.String(), "more than the 8 requests at once") {
		t.Errorf("broken page: %d %s; want 422 naming the line", bad.Code, bad.Body)
	}
	wrongType := e.send(t, "POST", "/v1/runs/import?format=vllm-bench", text, seed.Data)
	if wrongType.Code != 415 || !strings.Contains(wrongType.Body.String(), "multipart/form-data") {
		t.Errorf("tool output as text: %d %s; want 415", wrongType.Code, wrongType.Body)
	}
	e.sameRows(t, before)
}

// TestConcurrentSubmissions sends 300 runs from 16 goroutines through a
// real HTTP server: every one is stored once, none fails.
func TestConcurrentSubmissions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrixd.db")
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := server.New(st, server.Config{Calc: predict.New(st, predict.DefaultCacheBytes, nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, token, err := st.CreateKey(ctx, "loader", false)
	if err != nil {
		t.Fatal(err)
	}
	const n, workers = 300, 16
	runs := storetest.Runs(47, n)
	jobs := make(chan int)
	var (
		mu     sync.Mutex
		errs   []string
		status = map[int]int{}
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/runs", bytes.NewReader(runJSON(t, runs[i])))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("run-%d", i))
				resp, err := srv.Client().Do(req)
				mu.Lock()
				if err != nil {
					errs = append(errs, err.Error())
				} else {
					status[resp.StatusCode]++
					if resp.StatusCode != 201 {
						var b bytes.Buffer
						b.ReadFrom(resp.Body)
						errs = append(errs, b.String())
					}
					resp.Body.Close()
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d failed submissions, first: %.300s", len(errs), errs[0])
	}
	if got, _ := st.CountRuns(ctx); got != n || status[201] != n {
		t.Errorf("%d runs stored, statuses %v; want %d, all 201", got, status, n)
	}
}

func TestImportToolOutput(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	llamaMeta := toolFixture(t, "llama-pr16894.META.json")

	ct, body := multipartBody(t, llamaMeta, "llama-pr16894-qwen2-7b.md")
	h := with(k["alice"], "Content-Type", ct, "Idempotency-Key", "llama-1")
	rec := e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench", h, body)
	if rec.Code != 201 {
		t.Fatalf("llama import: %d %.800s", rec.Code, rec.Body)
	}
	r := decodeRun(t, rec.Body.Bytes())
	// The fixture's row PP 4096, TG 32, B 4: T_PP 10.694 s, T_TG 0.655 s, S_TG 195.49 t/s.
	var cell *api.DecodeCell
	for i := range r.Decode {
		if r.Decode[i].ContextTokens == 4096 && r.Decode[i].Concurrency == 4 {
			cell = &r.Decode[i]
		}
	}
	if cell == nil || *cell.TotalTokS != 195.49 || *cell.OutputTokens != 4*32 || *cell.TTFTMs != 1000*10.694 || *cell.DurationS != 0.655 {
		t.Errorf("PP 4096 B 4 = %+v; want the fixture's row", cell)
	}
	if r.Launch.Flags["n_kv_max"] != "20480" || *r.Benchmark.Tool != "llama-batched-bench" || *r.SubmittedBy != "alice" {
		t.Errorf("flags %v, tool %v, submitted_by %v", r.Launch.Flags, r.Benchmark.Tool, r.SubmittedBy)
	}

	// A retry frames the same content with another boundary: the same request.
	before := e.rows(t)
	ct2, body2 := multipartBody(t, llamaMeta, "llama-pr16894-qwen2-7b.md")
	retry := e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench", with(h, "Content-Type", ct2), body2)
	if retry.Code != 201 || retry.Header().Get("Idempotent-Replayed") != "true" || decodeRun(t, retry.Body.Bytes()).ID != r.ID {
		t.Errorf("retry: %d %q; want the first answer replayed", retry.Code, retry.Header().Get("Idempotent-Replayed"))
	}

	vct, vbody := multipartBody(t, toolFixture(t, "vllm-sweep.META.json"), "vllm-sweep-opt125m-c2.json")
	vrec := e.send(t, "POST", "/v1/runs/import?format=vllm-bench", with(k["alice"], "Content-Type", vct), vbody)
	if vrec.Code != 201 {
		t.Fatalf("vllm import: %d %.800s", vrec.Code, vrec.Body)
	}
	v := decodeRun(t, vrec.Body.Bytes())
	// The fixture: max_concurrency 2, 256 input tokens over 8 requests,
	// output_throughput 93.74767963046673, median_tpot_ms and total_output_tokens 128.
	if len(v.Decode) != 1 || v.Decode[0].Concurrency != 2 || v.Decode[0].ContextTokens != 32 || *v.Decode[0].TotalTokS != 93.74767963046673 || *v.Decode[0].OutputTokens != 128 {
		t.Errorf("vllm cell = %+v", v.Decode)
	}
	before = e.rows(t)

	// Refusals store nothing.
	badMeta := bytes.Replace(llamaMeta, []byte(`"n_batch": "2048"`), []byte(`"n_batch": "4096"`), 1)
	if bytes.Equal(badMeta, llamaMeta) {
		t.Fatal("the META fixture changed: the test's edit no longer applies")
	}
	cases := []struct {
		name, target string
		meta         []byte
		files        []string
		want         []string
	}{
		{"output contradicts meta", "/v1/runs/import?format=llama-batched-bench", badMeta, []string{"llama-pr16894-qwen2-7b.md"},
			[]string{`"file":"llama-pr16894-qwen2-7b.md"`, `"line":1`, "n_batch is 2048 here"}},
		{"meta with a problem", "/v1/runs/import?format=llama-batched-bench", []byte(`{"title": "", "model": {"name": "m"}, "hardware": {"gpu": "g"}, "engine": {"name": "e"}}`),
			[]string{"llama-pr16894-qwen2-7b.md"}, []string{`"file":"meta"`, `"pointer":"/title"`}},
		{"request rate, not concurrency", "/v1/runs/import?format=vllm-bench", toolFixture(t, "vllm-sweep.META.json"), []string{"vllm-request-rate.jsonl"},
			[]string{`"file":"vllm-request-rate.jsonl"`, "max_concurrency"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, body := multipartBody(t, c.meta, c.files...)
			rec := e.send(t, "POST", c.target, with(k["alice"], "Content-Type", ct), body)
			if rec.Code != 422 {
				t.Fatalf("%d %.800s; want 422", rec.Code, rec.Body)
			}
			for _, w := range c.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body lacks %s: %.800s", w, rec.Body)
				}
			}
			e.sameRows(t, before)
		})
	}
	mct, mbody := multipartBody(t, []byte(`{"title": `), "llama-pr16894-qwen2-7b.md")
	if rec := e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench", with(k["alice"], "Content-Type", mct), mbody); rec.Code != 400 || !strings.Contains(rec.Body.String(), "meta: line 1") {
		t.Errorf("meta that is not JSON: %d %s; want 400 naming meta", rec.Code, rec.Body)
	}
	noMeta := e.send(t, "POST", "/v1/runs/import?format=vllm-bench", with(k["alice"], "Content-Type", "multipart/form-data; boundary=x"), []byte("--x--\r\n"))
	if noMeta.Code != 400 || !strings.Contains(noMeta.Body.String(), `"field":"meta"`) {
		t.Errorf("no meta part: %d %s", noMeta.Code, noMeta.Body)
	}
	e.sameRows(t, before)
}

// TestChunkedBodyOverTheLimit: a body sent without Content-Length is cut
// at the limit while it is read, and is a 413 like any other.
func TestChunkedBodyOverTheLimit(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	big := bytes.Repeat([]byte("x"), 2<<20)
	ct, multi := multipartBody(t, big, "llama-pr16894-qwen2-7b.md")
	for _, c := range []struct{ method, target, ctype string }{
		{"POST", "/v1/runs", "application/json"},
		{"POST", "/v1/runs/import", "text/plain"},
		{"POST", "/v1/runs/import?format=llama-batched-bench", ct},
		{"PATCH", "/v1/runs/rwhatever", "application/merge-patch+json"},
	} {
		body := big
		if strings.HasPrefix(c.ctype, "multipart/") {
			body = multi
		}
		before := e.rows(t)
		req := httptest.NewRequest(c.method, c.target, io.NopCloser(bytes.NewReader(body)))
		req.ContentLength = -1
		req.Header = with(k["alice"], "Content-Type", c.ctype)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		if rec.Code != 413 || !strings.Contains(rec.Body.String(), "larger than the limit") {
			t.Errorf("%s %s chunked: %d %.300s; want 413", c.method, c.target, rec.Code, rec.Body)
		}
		e.sameRows(t, before)
	}
}

// TestDeletedRunLeavesTheCalculator: a run's fit goes with the run, and a
// submitted run is fitted before anyone asks.
func TestDeletedRunLeavesTheCalculator(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "admin")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	q := "/v1/calculator/decode?run_id=" + fara + "&context_tokens=49152&concurrency=8"
	if rec := e.do(t, "GET", q, nil); rec.Code != 200 {
		t.Fatalf("before delete: %d", rec.Code)
	}
	if rec := e.send(t, "DELETE", "/v1/runs/"+fara, k["admin"], nil); rec.Code != 204 {
		t.Fatal(rec.Code)
	}
	if rec := e.do(t, "GET", q, nil); rec.Code != 404 {
		t.Errorf("the calculator still answers for a deleted run: %d %.200s", rec.Code, rec.Body)
	}

	fits := func() float64 {
		return metricValue(t, e.do(t, "GET", "/metrics", nil).Body.String(), "matrixd_calculator_fit_seconds_count")
	}
	before := fits()
	if rec := e.send(t, "POST", "/v1/runs", k["admin"], runJSON(t, storetest.Runs(52, 1)[0])); rec.Code != 201 {
		t.Fatal(rec.Code)
	}
	storetest.WaitFor(t, "a submitted run fitted before anyone asked", func() bool { return fits() > before })
}
