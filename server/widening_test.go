package server_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestRunIDWithDisagreeingFilters: a filter beside run_id that the run
// does not match is a 400 naming it on every calculator endpoint; one it
// matches is answered.
func TestRunIDWithDisagreeingFilters(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	endpoints := []string{
		"/v1/calculator/decode?context_tokens=49152&concurrency=8",
		"/v1/calculator/capacity?context_tokens=49152",
		"/v1/calculator/grid?",
		"/v1/calculator/prefill?context_tokens=49152",
	}
	for _, ep := range endpoints {
		base := ep + "&run_id=" + fara.ID
		for _, c := range []struct {
			param, value string
			wantStatus   int
		}{
			{"kv_cache_dtype", "fp8", 400},
			{"engine_version", "0.0.1", 400},
			{"kv_cache_dtype", strings.ToUpper(fara.Launch.KVCacheDtype), 200},
			{"engine_version", fara.Engine.Version, 200},
		} {
			target := base + "&" + c.param + "=" + url.QueryEscape(c.value)
			rec := e.do(t, "GET", target, nil)
			if rec.Code != c.wantStatus {
				t.Errorf("%s: %d %.300s; want %d", target, rec.Code, rec.Body, c.wantStatus)
				continue
			}
			if c.wantStatus == 400 && !strings.Contains(rec.Body.String(), `"field":"`+c.param+`"`) {
				t.Errorf("%s: the 400 does not name %s: %s", target, c.param, rec.Body)
			}
		}
	}
}

// TestEncodedSlashIsNotASeparator: %2F inside a path segment does not
// route as a slash, on the API or the pages.
func TestEncodedSlashIsNotASeparator(t *testing.T) {
	e := newEnv(t, 0)
	id := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	if rec := e.do(t, "GET", "/v1/runs/"+id+"/decode", nil); rec.Code != 200 {
		t.Fatalf("the decode cells: %d", rec.Code)
	}
	for _, target := range []string{"/v1/runs/" + id + "%2Fdecode", "/v1/runs/" + id + "%2fdecode", "/runs/" + id + "%2Fdecode", "/v1%2Fruns"} {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), "encoded slash") {
			t.Errorf("GET %s: %d %.300s; want 404 naming the encoded slash", target, rec.Code, rec.Body)
		}
	}
}
