package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no series %s in\n%.3000s", series, body)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	e.do(t, "GET", "/v1/runs/"+fara, nil)
	e.do(t, "GET", "/v1/runs/"+fara, nil)
	e.do(t, "GET", "/v1/runs/rnothere", nil)
	e.do(t, "GET", "/v1/calculator/decode?run_id="+fara+"&context_tokens=49152&concurrency=8", nil)
	rec := e.do(t, "GET", "/metrics", nil)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	if v := metricValue(t, body, `matrixd_http_requests_total{method="GET",route="/v1/runs/:run_id",status="200"}`); v != 2 {
		t.Errorf("requests for the run counted %v, want 2", v)
	}
	if v := metricValue(t, body, `matrixd_http_requests_total{method="GET",route="/v1/runs/:run_id",status="404"}`); v != 1 {
		t.Errorf("404s counted %v, want 1", v)
	}
	if v := metricValue(t, body, `matrixd_response_cache_requests_total{result="hit"}`); v < 1 {
		t.Errorf("cache hits %v, want at least 1", v)
	}
	misses := metricValue(t, body, `matrixd_response_cache_requests_total{result="miss"}`)
	e.do(t, "GET", "/v1/runs?limit=0", nil)
	e.do(t, "GET", "/v1/runs/rnothere2", nil)
	if v := metricValue(t, e.do(t, "GET", "/metrics", nil).Body.String(), `matrixd_response_cache_requests_total{result="miss"}`); v != misses {
		t.Errorf("errors counted as cache misses: %v → %v", misses, v)
	}
	if v := metricValue(t, body, `matrixd_calculator_fit_seconds_count`); v != 1 {
		t.Errorf("fits counted %v, want 1", v)
	}
	if n, b := metricValue(t, body, "matrixd_calculator_fit_cache_fits"), metricValue(t, body, "matrixd_calculator_fit_cache_bytes"); n != 1 || b < 10e3 || b > 1e6 {
		t.Errorf("the fit cache holds %v fits in %v bytes; want fara's, tens of KB", n, b)
	}
	for _, series := range []string{`matrixd_db_connections_open{pool="reader"}`, `matrixd_http_request_duration_seconds_count{method="GET",route="/v1/runs/:run_id"}`, "go_goroutines"} {
		metricValue(t, body, series)
	}
}

// TestColdAnswerComputedOnce: a burst of requests for one cold answer
// computes it once; the rest wait for it.
func TestColdAnswerComputedOnce(t *testing.T) {
	e := newEnv(t, 300)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/v1/gpus")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	body := e.do(t, "GET", "/metrics", nil).Body.String()
	if v := metricValue(t, body, `matrixd_response_cache_requests_total{result="miss"}`); v != 1 {
		t.Errorf("%v misses for 32 concurrent requests of one answer, want 1", v)
	}
}
