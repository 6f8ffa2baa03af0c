package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

func TestETagsAndConditionalGets(t *testing.T) {
	e := newEnv(t, 3)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	for _, target := range []string{
		"/v1/runs", "/v1/runs/" + fara, "/v1/runs/" + fara + "/decode?format=csv", "/v1/gpus",
		"/v1/leaderboard?context_tokens=0&concurrency=1", "/v1/calculator/decode?run_id=" + fara + "&context_tokens=49152&concurrency=8",
	} {
		t.Run(target, func(t *testing.T) {
			first := e.do(t, "GET", target, nil)
			etag := first.Header().Get("ETag")
			if first.Code != 200 || !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
				t.Fatalf("status %d, ETag %q; want 200 with a strong ETag", first.Code, etag)
			}
			if cc := first.Header().Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
				t.Errorf("Cache-Control %q", cc)
			}
			again := e.do(t, "GET", target, nil)
			if again.Header().Get("ETag") != etag || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
				t.Errorf("second answer differs from the first")
			}
			if again.Header().Get("Content-Type") != first.Header().Get("Content-Type") {
				t.Errorf("Content-Type %q then %q", first.Header().Get("Content-Type"), again.Header().Get("Content-Type"))
			}
			nm := e.do(t, "GET", target, http.Header{"If-None-Match": {`"other", ` + etag}})
			if nm.Code != 304 || nm.Body.Len() != 0 || nm.Header().Get("ETag") != etag {
				t.Errorf("If-None-Match: %d with %d bytes, ETag %q; want 304, no body", nm.Code, nm.Body.Len(), nm.Header().Get("ETag"))
			}
			if miss := e.do(t, "GET", target, http.Header{"If-None-Match": {`"other"`}}); miss.Code != 200 {
				t.Errorf("If-None-Match of another tag: %d, want 200", miss.Code)
			}
		})
	}
	for _, live := range []string{"/healthz", "/readyz", "/metrics"} {
		if rec := e.do(t, "GET", live, nil); rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("ETag") != "" {
			t.Errorf("%s: Cache-Control %q, ETag %q; want no-store and none", live, rec.Header().Get("Cache-Control"), rec.Header().Get("ETag"))
		}
	}
	if bad := e.do(t, "GET", "/v1/runs/rnothere", nil); bad.Header().Get("ETag") != "" || bad.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("a 404 has ETag %q, Cache-Control %q; want none, no-store", bad.Header().Get("ETag"), bad.Header().Get("Cache-Control"))
	}
}

func TestWritesInvalidateCachedAnswers(t *testing.T) {
	clk := newClock()
	e := newEnvOn(t, store.Options{VersionClock: clk.Now})
	k := e.keys(t, "alice")
	list := e.do(t, "GET", "/v1/runs", nil)
	gpus := e.do(t, "GET", "/v1/gpus", nil)
	r := storetest.Runs(50, 1)[0]
	r.Hardware.GPU = "A GPU only this run has"
	if rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, r)); rec.Code != 201 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	list2 := e.do(t, "GET", "/v1/runs", nil)
	if list2.Header().Get("ETag") == list.Header().Get("ETag") || !strings.Contains(list2.Body.String(), r.Title) {
		t.Error("the run list was not recomputed after a write")
	}
	if stale := e.do(t, "GET", "/v1/runs", http.Header{"If-None-Match": {list.Header().Get("ETag")}}); stale.Code != 200 {
		t.Errorf("If-None-Match of the old list: %d, want 200 (the list changed)", stale.Code)
	}
	if g := e.do(t, "GET", "/v1/gpus", nil); !strings.Contains(g.Body.String(), r.Hardware.GPU) || g.Header().Get("ETag") == gpus.Header().Get("ETag") {
		t.Error("the GPU catalog was not recomputed after a write")
	}

	// A write by another process on the same file (the CLI) shows once the
	// store's VersionMaxAge has passed on its clock.
	other, err := store.Open(context.Background(), e.path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r2 := storetest.Runs(51, 1)[0]
	if _, _, err := other.CreateRun(context.Background(), r2); err != nil {
		t.Fatal(err)
	}
	clk.advance(store.VersionMaxAge + time.Millisecond)
	if l := e.do(t, "GET", "/v1/runs", nil); !strings.Contains(l.Body.String(), r2.Title) {
		t.Errorf("a run stored by another process is missing %v later", store.VersionMaxAge)
	}
}

// TestHeadAndGzip goes through a real HTTP server: net/http drops the body
// of an answer to HEAD, which a recorder would keep.
func TestHeadAndGzip(t *testing.T) {
	e := newEnv(t, 0)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	plainReq, _ := http.NewRequest("GET", srv.URL+"/v1/runs/"+fara, nil)
	plainReq.Header.Set("Accept-Encoding", "identity") // else the client asks for gzip itself
	get, err := http.DefaultClient.Do(plainReq)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(get.Body)
	get.Body.Close()
	for _, path := range []string{"/v1/runs/" + fara, "/v1/runs", "/healthz", "/openapi.yaml"} {
		headReq, _ := http.NewRequest("HEAD", srv.URL+path, nil)
		headReq.Header.Set("Accept-Encoding", "identity")
		head, err := http.DefaultClient.Do(headReq)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, head.Body)
		head.Body.Close()
		if head.StatusCode != 200 || n != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes; want 200, none", path, head.StatusCode, n)
		}
		if path == "/v1/runs/"+fara && (head.Header.Get("ETag") != get.Header.Get("ETag") || head.Header.Get("Content-Length") != strconv.Itoa(len(body))) {
			t.Errorf("HEAD headers ETag %q Content-Length %q; GET's %q %d", head.Header.Get("ETag"), head.Header.Get("Content-Length"), get.Header.Get("ETag"), len(body))
		}
	}

	refused, _ := http.NewRequest("GET", srv.URL+"/v1/runs/"+fara, nil)
	refused.Header.Set("Accept-Encoding", "gzip;q=0, identity")
	if resp, err := http.DefaultTransport.RoundTrip(refused); err != nil || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 answered with Content-Encoding %q (%v)", resp.Header.Get("Content-Encoding"), err)
	} else {
		resp.Body.Close()
	}

	req, _ := http.NewRequest("GET", srv.URL+"/v1/runs/"+fara, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	for range 2 { // computed, then cached
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(resp.Body)
		if resp.Header.Get("Content-Encoding") != "gzip" || err != nil {
			t.Fatalf("Accept-Encoding gzip: Content-Encoding %q, %v", resp.Header.Get("Content-Encoding"), err)
		}
		plain, _ := io.ReadAll(zr)
		resp.Body.Close()
		if !bytes.Equal(plain, body) || !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("gzip body differs from the plain one (%d vs %d bytes) or Vary %q", len(plain), len(body), resp.Header.Get("Vary"))
		}
		if resp.Header.Get("ETag") == get.Header.Get("ETag") {
			t.Error("the gzip answer has the plain answer's strong ETag")
		}
	}
}

// TestDeletedRunIsNotAnsweredFromAnotherInstancesFit: an instance that
// fitted a run does not answer for it after another instance (another
// process on the same database) deleted it.
func TestDeletedRunIsNotAnsweredFromAnotherInstancesFit(t *testing.T) {
	e := newEnv(t, 0)
	keys := e.keys(t, "admin-ops")
	stored, _, err := e.st.CreateRun(context.Background(), storetest.Runs(61, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	other, err := store.Open(context.Background(), e.path, store.Options{VersionClock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	h2, err := server.New(other, server.Config{Calc: predict.New(other, predict.DefaultCacheBytes, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(h http.Handler) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/calculator/decode?run_id="+stored.ID+"&context_tokens="+itoa(stored.Decode[0].ContextTokens)+"&concurrency=1", nil))
		return rec.Code
	}
	if code := ask(h2); code != 200 && code != 422 {
		t.Fatalf("the second instance did not answer: %d", code)
	}
	if del := e.send(t, "DELETE", "/v1/runs/"+stored.ID, keys["admin-ops"], nil); del.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", del.Code, del.Body)
	}
	clk.advance(store.VersionMaxAge + time.Millisecond)
	if code := ask(h2); code != http.StatusNotFound {
		t.Errorf("the second instance answers %d for a deleted run, want 404", code)
	}
}

// TestCacheNeverAnswersForTheValidator: a query the spec refuses is
// refused even when a valid query of the same key is cached (a format the
// spec does not list, or a repeated one, is not dropped from the key).
func TestCacheNeverAnswersForTheValidator(t *testing.T) {
	e := newEnv(t, 0)
	if rec := e.do(t, http.MethodGet, "/v1/runs", nil); rec.Code != http.StatusOK {
		t.Fatalf("warm: %d %s", rec.Code, rec.Body)
	}
	for _, q := range []string{"format=not_one_of_them", "format=JSON", "format=json&format=zzz", "format=csv&format=csv"} {
		if rec := e.do(t, http.MethodGet, "/v1/runs?"+q, nil); rec.Code != http.StatusBadRequest {
			t.Errorf("/v1/runs?%s: %d, want 400 (%.200s)", q, rec.Code, rec.Body)
		}
	}
}
