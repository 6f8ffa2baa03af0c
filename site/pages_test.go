package site_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestPagesKeepTheirPolicyWhenCached: a page answered from the response
// cache carries the page's own Content-Security-Policy, as the first
// answer did; with the API's policy instead, its stylesheet is blocked and
// the widget cannot be framed.
func TestPagesKeepTheirPolicyWhenCached(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	for _, c := range []struct{ path, want string }{
		{"/", "style-src 'self'"},
		{"/runs/" + fara.ID, "style-src 'self'"},
		{"/leaderboard?context_tokens=16384&concurrency=8", "style-src 'self'"},
		{"/widget/calculator?run=" + fara.ID, "frame-ancestors *"},
	} {
		for i := range 3 {
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d", c.path, rec.Code)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, c.want) {
				t.Errorf("%s, answer %d: Content-Security-Policy %q lacks %q", c.path, i+1, csp, c.want)
			}
		}
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/runs", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); csp != "default-src 'none'; frame-ancestors 'none'" {
		t.Errorf("the API's policy is %q", csp)
	}
}

// TestPagesRefuseWhatTheAPIRefuses: a page's query is checked as the API
// operation it mirrors checks it; a bad one is a 400 page naming each bad
// parameter (escaped) with a link to the page without them, never a page
// drawn from less than was asked.
func TestPagesRefuseWhatTheAPIRefuses(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	tests := []struct {
		name, target, api string
		wantStatus        int
		wantContains      []string
		wantWithout       string // the link to the page without the bad parameters
	}{
		{"leaderboard context not encoded", "/leaderboard?context_tokens=%zz&concurrency=8", "/v1/leaderboard", 400,
			[]string{"<code>context_tokens</code>", "not URL-encoded correctly"}, "/leaderboard?concurrency=8"},
		{"leaderboard metric not in the enum", "/leaderboard?context_tokens=16384&concurrency=8&metric=ttft", "/v1/leaderboard", 400,
			[]string{"<code>metric</code>", "total_tok_s"}, "/leaderboard?context_tokens=16384&amp;concurrency=8"},
		{"leaderboard metric alone", "/leaderboard?metric=ttft", "/v1/leaderboard", 400,
			[]string{"<code>context_tokens</code>", "<code>concurrency</code>", "<code>metric</code>"}, "/leaderboard"},
		{"leaderboard cell missing", "/leaderboard?context_tokens=16384", "/v1/leaderboard", 400, []string{"<code>concurrency</code>"}, ""},
		{"leaderboard concurrency out of range", "/leaderboard?context_tokens=0&concurrency=0", "/v1/leaderboard", 400,
			[]string{"<code>concurrency</code>", "at least 1"}, "/leaderboard?context_tokens=0"},
		{"leaderboard context out of range", "/leaderboard?context_tokens=16777217&concurrency=8", "/v1/leaderboard", 400,
			[]string{"<code>context_tokens</code>", "at most 16,777,216"}, ""},
		{"leaderboard unknown parameter", "/leaderboard?context_tokens=0&concurrency=8&gpus=3090", "/v1/leaderboard", 400,
			[]string{"<code>gpus</code>", "not a parameter"}, ""},
		{"leaderboard vram inverted", "/leaderboard?context_tokens=0&concurrency=8&vram_gb_min=30&vram_gb_max=10", "/v1/leaderboard", 400,
			[]string{"<code>vram_gb_min</code>"}, ""},
		{"leaderboard forged cursor", "/leaderboard?context_tokens=0&concurrency=8&cursor=abc", "/v1/leaderboard", 400, []string{"<code>cursor</code>"}, ""},
		{"index gpu not encoded", "/?gpu=%zz", "/v1/runs", 400, []string{"<code>gpu</code>", "not URL-encoded correctly"}, "/"},
		{"index name not encoded", "/?%zz=1&model=fara", "/v1/runs", 400, []string{"parameter name is not URL-encoded"}, "/?model=fara"},
		{"index repeated", "/?gpu=a&gpu=b", "/v1/runs", 400, []string{"<code>gpu</code>", "given 2 times"}, "/"},
		{"index semicolon", "/?limit=1;2", "/v1/runs", 400, []string{"<code>limit</code>", "&#39;;&#39;"}, "/"},
		{"index bad sort", "/?sort=fastest", "/v1/runs", 400, []string{"<code>sort</code>"}, "/"},
		{"index limit too big", "/?limit=500", "/v1/runs", 400, []string{"<code>limit</code>", "at most 200"}, "/"},
		{"index misspelt filter", "/?gpus=RTX%203090", "/v1/runs", 400, []string{"<code>gpus</code>", "not a parameter"}, "/"},
		{"index filter too long", "/?model=" + strings.Repeat("m", 201), "/v1/runs", 400, []string{"<code>model</code>"}, "/"},
		{"index escapes what it repeats", "/?%3Cscript%3E=1", "/v1/runs", 400, []string{"<code>&lt;script&gt;</code>"}, "/"},
		{"run unknown parameter", "/runs/" + fara + "?format=csv", "/v1/runs/" + fara, 400, []string{"<code>format</code>", "it takes none"}, "/runs/" + fara},
		{"run bad id", "/runs/bad%20id!", "/v1/runs/x", 400, []string{"<code>run_id</code>"}, ""},
		{"run id too long", "/runs/" + strings.Repeat("r", 65), "/v1/runs/x", 400, []string{"<code>run_id</code>"}, ""},
		{"run unknown", "/runs/rnope", "/v1/runs/x", 404, []string{`run <span translate="no">rnope</span> does not exist`}, ""},

		{"index form left blank", "/?model=&gpu=&engine=&quantization=&sort=-created_at", "/v1/runs", 200, []string{fara}, ""},
		{"index filters it does not show", "/?vram_gb_min=20", "/v1/runs", 200, []string{`type="hidden" name="vram_gb_min" value="20"`, "Filtered by vram_gb_min"}, ""},
		{"leaderboard by ttft", "/leaderboard?context_tokens=16384&concurrency=8&metric=ttft_ms", "/v1/leaderboard", 200, []string{"ranked by TTFT (lowest first)"}, ""},
		{"leaderboard asks for a cell", "/leaderboard", "/v1/leaderboard", 200, []string{"Choose a cell", "Contexts measured"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.page(t, tt.target, tt.api)
			body := rec.Body.String()
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %.1500s", rec.Code, tt.wantStatus, body)
			}
			for _, want := range tt.wantContains {
				if !strings.Contains(body, want) {
					t.Errorf("body lacks %s\nbody: %.3000s", want, body)
				}
			}
			if tt.wantStatus == 400 {
				if !strings.Contains(body, `<a href="/">Back to the runs</a>`) {
					t.Errorf("no link home")
				}
				if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
					t.Errorf("Cache-Control %q, want no-store", cc)
				}
			}
			if tt.wantWithout != "" && !strings.Contains(body, `<a href="`+tt.wantWithout+`">This page without`) {
				t.Errorf("no link to %s\nbody: %.3000s", tt.wantWithout, body)
			}
		})
	}
}

// TestWidgetRefusesWhatTheCalculatorRefuses: the widget's run, model and GPU
// are checked as the calculator's parameters, its theme as an enum.
func TestWidgetRefusesWhatTheCalculatorRefuses(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	for _, tt := range []struct {
		target     string
		wantStatus int
		want       string
	}{
		{"/widget/calculator?run=" + fara + "&theme=dark", 200, `data-theme="dark"`},
		{"/widget/calculator?run=" + fara, 200, "<main>\n<div data-matrixd-calculator"},
		{"/widget/calculator?run=" + fara, 200, "<h1>Decode speed calculator</h1>"},
		{"/widget/calculator?lang=th", 200, "<h1>เครื่องคำนวณความเร็ว decode</h1>"},
		{"/widget/calculator", 200, `data-theme="light"`},
		{"/widget/calculator?run=&model=&gpu=", 200, `data-run=""`},
		{"/widget/calculator?theme=blue", 400, "<code>theme</code>"},
		{"/widget/calculator?run=bad%20id!", 400, "<code>run</code>"},
		{"/widget/calculator?model=" + strings.Repeat("m", 201), 400, "<code>model</code>"},
		{"/widget/calculator?run=" + fara + "&context=16384&concurrency=4", 200, `data-context="16384" data-concurrency="4"`},
		{"/widget/calculator?run=" + fara + "&context=-1", 400, "<code>context</code>"},
		{"/widget/calculator?run=" + fara + "&max_output=128", 200, `data-max-output="128"`},
		{"/widget/calculator?run=" + fara + "&max_output=0", 400, "<code>max_output</code>"},
		{"/widget/calculator?run=" + fara + "&concurrency=0", 400, "<code>concurrency</code>"},
		{"/widget/calculator?run=" + fara + "&context_tokens=16384", 400, "<code>context_tokens</code>"},
		{"/widget/calculator?gpu=%zz", 400, "<code>gpu</code>"},
		{"/widget/calculator?theme=dark&theme=light", 400, "given 2 times"},
	} {
		rec := e.page(t, tt.target, "")
		if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("%s: %d, want %d with %s; body %.1500s", tt.target, rec.Code, tt.wantStatus, tt.want, rec.Body)
		}
	}
}

// queryCases lists queries for an operation, from its parameters in
// openapi.yaml: for each, values just inside and outside its schema, a
// value that does not decode, the parameter twice or joined by ';', and a
// parameter the operation does not take. Empty values are left out: a
// page takes them as not given, as a form sends a blank field.
func queryCases(op *openapi3.Operation) []string {
	var out []string
	for _, ref := range op.Parameters {
		p := ref.Value
		if p.In != openapi3.ParameterInQuery || p.Schema == nil {
			continue
		}
		s := p.Schema.Value
		n := url.QueryEscape(p.Name)
		out = append(out, n+"=%zz", n+"=1;2", n+"=a&"+n+"=b", "%zz"+n+"=1")
		switch {
		case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
			out = append(out, n+"=ten", n+"=1e400", n+"=NaN")
			if s.Min != nil {
				out = append(out, n+"="+strconv.FormatFloat(*s.Min, 'f', -1, 64), n+"="+strconv.FormatFloat(*s.Min-1, 'f', -1, 64))
			}
			if s.Max != nil {
				out = append(out, n+"="+strconv.FormatFloat(*s.Max, 'f', -1, 64), n+"="+strconv.FormatFloat(*s.Max+1, 'f', -1, 64))
			}
			if s.Type.Is(openapi3.TypeInteger) {
				out = append(out, n+"=1.5")
			}
		case len(s.Enum) > 0:
			for _, v := range s.Enum {
				out = append(out, n+"="+url.QueryEscape(fmt.Sprint(v)))
			}
			out = append(out, n+"=not_one_of_them", n+"="+url.QueryEscape(strings.ToUpper(fmt.Sprint(s.Enum[0]))))
		case s.Type.Is(openapi3.TypeString):
			out = append(out, n+"=x", n+"=%3Cb%3E")
			if s.MaxLength != nil {
				out = append(out, n+"="+strings.Repeat("x", int(*s.MaxLength)), n+"="+strings.Repeat("x", int(*s.MaxLength)+1))
			}
		}
	}
	return append(out, "zz_unknown=1", "gpus=RTX%203090", "a=1;b=2")
}

// TestPagesAndAPIAgree: over queries generated from openapi.yaml, each
// page answers 400 exactly when the API operation it mirrors does, and
// otherwise with the same status.
func TestPagesAndAPIAgree(t *testing.T) {
	e := newEnv(t, 5)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	for _, pair := range []struct {
		page, api, base string // base: a query both answer 200
	}{
		{"/", "/v1/runs", ""},
		{"/leaderboard", "/v1/leaderboard", "context_tokens=16384&concurrency=8"},
		{"/runs/" + fara, "/v1/runs/" + fara, ""},
		{"/models", "/v1/models", ""},
		{"/hardware", "/v1/hardware", ""},
		{"/hardware/3090", "/v1/hardware/3090", ""},
		{"/submitters/Sandberg", "/v1/submitters/Sandberg", ""},
		{"/calculator", "/v1/calculator/decode", "run_id=" + fara + "&context_tokens=16384&concurrency=8"},
		{"/planner", "/v1/planner", "context_tokens=16384&min_per_request_tok_s=20"},
		{"/getting-started", "/v1/getting-started", ""},
	} {
		route, _, err := e.router.FindRoute(httptest.NewRequest(http.MethodGet, pair.api, nil))
		if err != nil {
			t.Fatal(err)
		}
		cases := queryCases(route.Operation)
		if len(cases) < 3 {
			t.Fatalf("%s: only %d cases", pair.api, len(cases))
		}
		refused := 0
		for _, q := range cases {
			// The case alone, and on top of a good query (later wins
			// nothing: a repeat is refused).
			for _, query := range []string{q, strings.Trim(pair.base+"&"+q, "&")} {
				api := e.do(t, http.MethodGet, pair.api+"?"+query, nil)
				page := e.page(t, pair.page+"?"+query, pair.api)
				// With no query at all, these pages ask for one.
				asks := query == "" && (pair.page == "/leaderboard" || pair.page == "/calculator" || pair.page == "/planner")
				if page.Code != api.Code && !asks {
					t.Errorf("%s?%.80s: page %d, API %d (%.300s)", pair.page, query, page.Code, api.Code, api.Body)
				}
				if api.Code == http.StatusBadRequest {
					refused++
					var p struct {
						Errors []struct{ Field *string } `json:"errors"`
					}
					if err := json.Unmarshal(api.Body.Bytes(), &p); err == nil {
						for _, fe := range p.Errors {
							if fe.Field != nil && !strings.Contains(page.Body.String(), "<code>"+html.EscapeString(*fe.Field)+"</code>") {
								t.Errorf("%s?%.80s: the page does not name %s", pair.page, query, *fe.Field)
							}
						}
					}
				}
			}
		}
		if refused == 0 {
			t.Errorf("%s: no generated query was refused; the generator is broken", pair.api)
		}
		t.Logf("%s: %d queries, %d refused by both", pair.page, 2*len(cases), refused)
	}
}
