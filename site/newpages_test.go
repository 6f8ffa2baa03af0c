package site_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestNewSitePages: the organizations, reports and benchmarks pages
// through the real handler, in each language, each linked from the
// layout's navigation and each answering what its data says.
func TestNewSitePages(t *testing.T) {
	e := newEnv(t, 0)
	nemotron := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	for _, tt := range []struct {
		name, target, api string
		wantStatus        int
		want, wantNot     []string
	}{
		{"organizations", "/organizations", "/v1/submitters", 200, []string{`<a href="/submitters/Sandberg">Sandberg</a>`, `<a href="/v1/submitters">JSON</a>`,
			`<a href="/organizations">Organizations</a>`, `<a href="/reports">Reports</a>`, `<a href="/benchmarks">Benchmarks</a>`, "Disputed runs, like flagged ones", `<th scope="col" class="n">Corroborated</th>`}, nil},
		{"organizations in Chinese", "/organizations?lang=zh-Hant", "/v1/submitters", 200, []string{"<h1>組織</h1>", "未標記"}, nil},
		{"organizations in Thai", "/organizations?lang=th", "/v1/submitters", 200, []string{"<h1>องค์กร</h1>"}, nil},
		{"organizations refuse a query", "/organizations?limit=1", "/v1/submitters", 400, []string{"<code>limit</code>"}, nil},
		{"reports", "/reports", "/feeds/reports.atom", 200, []string{`<a href="/reports/fastest-per-gpu-16k-x8">`, `<a href="/reports/engine-version-changes">`,
			`<a href="/reports/cheapest-100-users-20-tok-s">`, `<a href="/feeds/reports.atom">Atom feed</a>`}, nil},
		{"reports in Chinese", "/reports?lang=zh-Hant", "/feeds/reports.atom", 200, []string{"<h1>報告</h1>", "引擎版本之間的變化"}, nil},
		{"reports in Thai", "/reports?lang=th", "/feeds/reports.atom", 200, []string{"<h1>รายงาน</h1>"}, nil},
		{"fastest per GPU", "/reports/fastest-per-gpu-16k-x8", "/feeds/reports.atom", 200, []string{"<h1>The fastest run of each GPU at 16K × 8</h1>",
			`<a href="/runs/` + nemotron.ID + `">`, `<data value="427.5">`, `<a href="/v1/leaderboard?concurrency=8&amp;context_tokens=16384">`}, nil},
		{"fastest per GPU in Thai", "/reports/fastest-per-gpu-16k-x8?lang=th", "/feeds/reports.atom", 200, []string{"ผลการวัดที่เร็วที่สุดของแต่ละ GPU"}, nil},
		{"version changes", "/reports/engine-version-changes", "/feeds/reports.atom", 200, []string{"<h1>What changed between engine versions</h1>", `role="status"`}, nil},
		{"cheapest", "/reports/cheapest-100-users-20-tok-s?lang=zh-Hant", "/feeds/reports.atom", 200, []string{"以每人 20 tok/s 服務 100 位使用者", `<a href="/runs/` + nemotron.ID + `">`}, nil},
		{"report unknown", "/reports/nothing", "", 404, []string{"no report &#34;nothing&#34;"}, nil},
		{"benchmarks", "/benchmarks", "/v1/getting-started", 200, []string{`<a href="/benchmarks/sustained_decode"><code>sustained_decode</code></a>`,
			`<a href="/benchmarks/llama-batched-bench">`, `<a href="/benchmarks/vllm-bench">`, `<a href="/benchmarks/grid-csv">`, `<a href="/benchmarks/ds4-bench">`,
			`<a href="/benchmarks/llama-bench">`, `<a href="/benchmarks/llmfit">`, `<a href="/benchmarks/localmaxxing">`, `<a href="/benchmarks/inferencex">`}, nil},
		{"benchmarks in Chinese", "/benchmarks?lang=zh-Hant", "/v1/getting-started", 200, []string{"<h1>基準測試</h1>", "測量方法類別"}, nil},
		{"benchmarks in Thai", "/benchmarks?lang=th", "/v1/getting-started", 200, []string{"<h1>เบนช์มาร์ก</h1>"}, nil},
		{"a tool", "/benchmarks/vllm-bench", "/v1/getting-started", 200, []string{"<h1><code>vllm-bench</code></h1>", `<a href="/benchmarks/serving_sweep"><code>serving_sweep</code></a>`,
			"matrixd import --format vllm-bench --meta META.json FILE", "--max-concurrency", "/v1/runs/import?format=vllm-bench"}, nil},
		{"a tool the CLI alone reads", "/benchmarks/ds4-bench", "/v1/getting-started", 200, []string{"<pre class=\"cmd\"><code>matrixd import FILE</code></pre>", "does not take this format"}, []string{"/v1/runs/import?format"}},
		{"a class", "/benchmarks/decode_at_depth?lang=th", "/v1/getting-started", 200, []string{`<a href="/benchmarks/ds4-bench">`, `<a href="/benchmarks/llama-bench">`}, nil},
		{"benchmark unknown", "/benchmarks/%3Cb%3E", "", 404, []string{"&lt;b&gt;"}, []string{"<b>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.page(t, tt.target, tt.api)
			body := rec.Body.String()
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %.1500s", rec.Code, tt.wantStatus, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %s\nbody: %.6000s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("body has %s", w)
				}
			}
		})
	}
}

// TestReportsFeedAndSubmitters: the reports' Atom feed has an entry per
// report linking its permalink, and GET /v1/submitters lists the
// submitters with their counts, each answer as openapi.yaml says.
func TestReportsFeedAndSubmitters(t *testing.T) {
	e := newEnv(t, 0)
	rec := e.do(t, "GET", "/feeds/reports.atom", nil)
	if rec.Code != 200 {
		t.Fatalf("feed: %d %s", rec.Code, rec.Body)
	}
	for _, w := range []string{`href="/reports/fastest-per-gpu-16k-x8"`, `href="/reports/engine-version-changes"`, `href="/reports/cheapest-100-users-20-tok-s"`,
		`<link rel="alternate" type="text/html" href="/reports">`, "The fastest run of each GPU at 16K × 8", "GPUs measured at 16K × 8; the fastest: RTX 3090"} {
		if !strings.Contains(rec.Body.String(), w) {
			t.Errorf("feed lacks %s\n%s", w, rec.Body)
		}
	}
	if n := strings.Count(rec.Body.String(), "<entry>"); n != 3 {
		t.Errorf("feed has %d entries, want 3", n)
	}
	rec = e.do(t, "GET", "/v1/submitters", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"corroborated_count":0,"disputed_count":0,"latest_run_at":`) || !strings.Contains(rec.Body.String(), `"name":"Sandberg","run_count":1,"unflagged_count":1`) {
		t.Errorf("submitters: %d %s", rec.Code, rec.Body)
	}
}

// TestBrowserErrorPages: a mistyped path and a parameter a page does not
// take answer a browser (Accept: text/html) with the site's error page,
// navigation and all, and an API client with problem+json, as before.
func TestBrowserErrorPages(t *testing.T) {
	e := newEnv(t, 0)
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, tt := range []struct {
		name, target, accept string
		wantStatus           int
		html                 bool
		want                 []string
	}{
		{"unknown path, browser", "/nonexistent", browser, 404, true, []string{`<a href="/organizations">Organizations</a>`, "<h1>404 Not Found</h1>", `role="alert"`}},
		{"unknown path, browser in Thai", "/nonexistent?lang=th", browser, 404, true, []string{"ไม่พบ"}},
		{"unknown path, JSON", "/nonexistent", "application/json", 404, false, []string{`"status":404`}},
		{"unknown path, no Accept", "/nonexistent", "", 404, false, []string{`"status":404`}},
		{"unknown path, any", "/nonexistent", "*/*", 404, false, []string{`"status":404`}},
		{"docs lang, browser", "/docs?lang=th", browser, 400, true, []string{"<code>lang</code>", `<a href="/docs">`, `<a href="/reports">`}},
		{"docs lang, JSON", "/docs?lang=th", "application/problem+json", 400, false, []string{`"field":"lang"`}},
		{"API path, browser", "/v1/nothing", browser, 404, false, []string{`"status":404`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.accept != "" {
				h.Set("Accept", tt.accept)
			}
			rec := e.do(t, "GET", tt.target, h)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.500s", rec.Code, tt.wantStatus, rec.Body)
			}
			ct := rec.Header().Get("Content-Type")
			if tt.html != strings.HasPrefix(ct, "text/html") {
				t.Fatalf("Content-Type %q, want HTML %v", ct, tt.html)
			}
			if !tt.html && ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json", ct)
			}
			for _, w := range tt.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body lacks %s\n%.3000s", w, rec.Body)
				}
			}
			if !strings.Contains(strings.Join(rec.Header().Values("Vary"), ","), "Accept") {
				t.Errorf("Vary %q lacks Accept", rec.Header().Values("Vary"))
			}
		})
	}
}

// TestPlannerKeepsItsForm: a question the planner refuses with a 400
// keeps the form, filled with what was asked, and says what to change;
// a bad parameter the form does not show is not carried again.
func TestPlannerKeepsItsForm(t *testing.T) {
	e := newEnv(t, 0)
	for _, tt := range []struct {
		name, target string
		want, not    []string
	}{
		{"scaled model without a model", "/planner?context_tokens=8192&min_per_request_tok_s=25&include_scaled_model=true", []string{
			`<form class="filters" method="get" action="/planner"`, `name="context_tokens" min="0" max="16777216" required value="8192"`,
			`name="min_per_request_tok_s" min="0" max="1000000" step="any" required value="25"`, `role="alert"`, "<code>include_scaled_model</code>", "Change what is named above"}, nil},
		{"cost without a price", "/planner?context_tokens=0&min_per_request_tok_s=10&sort=cost", []string{`action="/planner"`, "<code>sort</code>"},
			[]string{`type="hidden" name="sort"`}},
		{"a required one missing", "/planner?context_tokens=0&lang=th", []string{`action="/planner"`, "<code>min_per_request_tok_s</code>", "แก้ไขสิ่งที่ระบุไว้"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.page(t, tt.target, "/v1/planner")
			if rec.Code != 400 {
				t.Fatalf("status %d, want 400: %.800s", rec.Code, rec.Body)
			}
			for _, w := range tt.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body lacks %s\n%.5000s", w, rec.Body)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(rec.Body.String(), w) {
					t.Errorf("body has %s", w)
				}
			}
		})
	}
}

// TestCalculatorPageSaysItsLimits: the calculator's form offers the
// answer across GPU generations with its band; an answer past a limit
// says which in words, with its numbers; a measured answer is labelled
// measured, and a value whose interval rounds to itself is not written
// as an interval.
func TestCalculatorPageSaysItsLimits(t *testing.T) {
	e := newEnv(t, 0)
	n := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	for _, tt := range []struct {
		name, target string
		wantStatus   int
		want, not    []string
	}{
		{"the form offers across generations", "/calculator", 200, []string{`<input type="checkbox" name="rough" value="true">`, "Across generations (a rough estimate, ±"}, nil},
		{"across generations answers", "/calculator?run_id=" + n + "&context_tokens=16384&concurrency=8&target_gpu=H100&rough=true&lang=th", 200,
			[]string{`name="rough" value="true" checked`, "ข้ามรุ่น (ค่าประมาณคร่าว ๆ ±"}, nil},
		{"without it, the refusal keeps the form", "/calculator?run_id=" + n + "&context_tokens=16384&concurrency=8&target_gpu=H100", 422,
			[]string{`role="alert"`, "different GPU generations", `<input type="checkbox" name="rough" value="true">`}, nil},
		{"past max_model_len", "/calculator?run_id=" + n + "&context_tokens=200000&concurrency=1", 200,
			[]string{"No speed: a context of 200,000 tokens plus up to", "max_model_len of", "Ask a context of at most"}, nil},
		{"past max_model_len in Chinese", "/calculator?run_id=" + n + "&context_tokens=200000&concurrency=1&lang=zh-Hant", 200, []string{"沒有速度"}, nil},
		{"over capacity", "/calculator?run_id=" + n + "&context_tokens=16384&concurrency=200", 200,
			[]string{"No speed: 200 requests at this context need more KV cache", "at most 48 fit"}, nil},
		{"measured", "/calculator?run_id=" + n + "&context_tokens=16384&concurrency=8", 200,
			[]string{`<th scope="col" class="n">Measured</th>`, "as measured"}, []string{`<th scope="col" class="n">Predicted</th>`, "No speed"}},
		{"predicted", "/calculator?run_id=" + n + "&context_tokens=20000&concurrency=6", 200,
			[]string{`<th scope="col" class="n">Predicted</th>`}, []string{`<th scope="col" class="n">Measured</th>`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.page(t, tt.target, "/v1/calculator/decode")
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.800s", rec.Code, tt.wantStatus, rec.Body)
			}
			for _, w := range tt.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body lacks %s\n%.6000s", w, rec.Body)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(rec.Body.String(), w) {
					t.Errorf("body has %s", w)
				}
			}
		})
	}
}

// TestVersionsReport: the report of what changed between engine versions
// lists each step of a series, newest first, with its verdict, why (its
// markup escaped) and a link to its comparison.
func TestVersionsReport(t *testing.T) {
	e := newEnv(t, 0)
	s := e.regressedSeries(t)
	rec := e.page(t, "/reports/engine-version-changes", "/feeds/reports.atom")
	if rec.Code != 200 {
		t.Fatalf("status %d: %.500s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, w := range []string{`<a href="/compare?run_ids=` + s[1].ID + `,` + s[2].ID + `">`, `<a href="/compare?run_ids=` + s[0].ID + `,` + s[1].ID + `">`,
		"<td>regressed</td>", "→ 2.2.0", "Series &lt;script&gt;"} {
		if !strings.Contains(body, w) {
			t.Errorf("report lacks %s\n%.5000s", w, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("a title's markup is not escaped")
	}
	if i, j := strings.Index(body, "→ 2.2.0"), strings.Index(body, "→ 2.1.0"); i < 0 || j < 0 || i > j {
		t.Errorf("steps not newest first: 2.2.0 at %d, 2.1.0 at %d", i, j)
	}
	feed := e.do(t, "GET", "/feeds/reports.atom", nil).Body.String()
	if !strings.Contains(feed, "2 steps between engine versions; the newest:") {
		t.Errorf("the feed's entry lacks the steps: %s", feed)
	}
}
