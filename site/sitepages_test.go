package site_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
)

// TestSitePages: the pages the site's navigation names, through the real
// handler: each answers what its API operation answers, links its JSON
// twin, refuses a query its operation refuses, and escapes what it repeats.
func TestSitePages(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	nemotron := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	for _, tt := range []struct {
		name, target, api string
		wantStatus        int
		want, wantNot     []string
	}{
		{"models", "/models", "/v1/models", 200, []string{
			`<a href="/models/` + fara.Model.Name + `">` + fara.Model.Name + `</a>`,
			`<a href="/models/` + nemotron.Model.Name + `">`, `<a href="/v1/models">JSON</a>`, `<a href="/models">Models</a>`}, nil},
		{"models refuse a query", "/models?sort=model", "/v1/models", 400, []string{"<code>sort</code>"}, nil},
		{"model by its path, slashes and all", "/models/" + fara.Model.Name, "/v1/models", 200, []string{
			`<h1 translate="no">` + fara.Model.Name + "</h1>", `<a href="/runs/` + fara.ID + `">`, `<span class="badge">best</span>`,
			`<a href="/v1/runs?model=LeaderboardModel1%2FFara1.5-4B-AutoRound-W4A16-RTN&amp;sort=-peak_total_tok_s">JSON</a>`,
			`<div class="scroll">`}, []string{nemotron.ID}},
		{"model in Thai", "/models/" + fara.Model.Name + "?lang=th", "/v1/models", 200, []string{"ดีที่สุด"}, nil},
		{"model with a hash and a space", "/models/org/a%23b%20c", "", 404, []string{"org/a#b c"}, nil},
		{"model unknown", "/models/nobody/nothing", "", 404, []string{"nobody/nothing"}, nil},
		{"model a substring only", "/models/LeaderboardModel1", "", 404, []string{"LeaderboardModel1"}, nil},
		{"model escaped", "/models/%3Cscript%3Ex", "", 404, []string{"&lt;script&gt;x"}, []string{"<script>x"}},
		{"model refuses a query", "/models/" + fara.Model.Name + "?limit=1", "/v1/models", 400, []string{"<code>limit</code>"}, nil},
		{"hardware", "/hardware", "/v1/hardware", 200, []string{`<a href="/hardware/RTX%203090">RTX 3090</a>`, `<a href="/v1/hardware">JSON</a>`,
			`<a href="/hardware">Hardware</a>`, `<div class="scroll">`}, nil},
		{"hardware filtered", "/hardware?vendor=AMD&generation=", "/v1/hardware", 200, []string{`<a href="/v1/hardware?vendor=AMD">JSON</a>`, `value="AMD"`}, []string{"RTX 3090"}},
		{"hardware none", "/hardware?vendor=apple&generation=hopper", "/v1/hardware", 200, []string{"No GPU of the catalog matches", `role="status"`}, nil},
		{"hardware unknown vendor", "/hardware?vendor=nobody", "/v1/hardware", 400, []string{`the catalog has no <span translate="no">vendor</span> <span translate="no">&#34;nobody&#34;</span>; it has <span translate="no">amd, apple, intel, nvidia</span>`}, nil},
		{"hardware refuses", "/hardware?vendors=AMD", "/v1/hardware", 400, []string{"<code>vendors</code>"}, nil},
		{"hardware vendor escaped", "/hardware?vendor=%3Cb%3E", "/v1/hardware", 400, []string{`&lt;b&gt;`}, []string{"<b>"}},
		{"gpu by alias", "/hardware/3090", "/v1/hardware/3090", 200, []string{`<h1 translate="no">RTX 3090</h1>`, `<a href="/runs/` + nemotron.ID + `">`,
			`<a href="/models/` + nemotron.Model.Name + `">`, `<a href="/v1/hardware/RTX%203090">JSON</a>`, "GeForce RTX 3090"}, []string{fara.ID}},
		{"gpu without runs", "/hardware/H100%20SXM", "/v1/hardware/H100", 200, []string{"No run has measured this GPU yet"}, nil},
		{"gpu unknown", "/hardware/nothing-like-it", "/v1/hardware/x", 404, []string{"nothing-like-it"}, nil},
		{"gpu name too long", "/hardware/" + strings.Repeat("g", 101), "/v1/hardware/x", 400, []string{"<code>gpu</code>"}, nil},
		{"gpu refuses a query", "/hardware/3090?x=1", "/v1/hardware/x", 400, []string{"<code>x</code>"}, nil},
		{"model links its GPU", "/models/" + fara.Model.Name, "/v1/models", 200, []string{`<a href="/hardware/RTX%203060">RTX 3060</a>`}, nil},
		{"submitter", "/submitters/sandberg", "/v1/submitters/sandberg", 200, []string{`<h1 translate="no">Sandberg</h1>`, `<a href="/runs/` + nemotron.ID + `">`,
			`<a href="/v1/submitters/Sandberg">JSON</a>`, `<a href="/?submitter=Sandberg">the run list</a>`, `<time datetime="`}, []string{fara.ID}},
		{"submitter in Chinese", "/submitters/Sandberg?lang=zh-Hant", "/v1/submitters/Sandberg", 200, []string{"第一筆結果"}, nil},
		{"submitter unknown", "/submitters/%3Cb%3Enobody", "/v1/submitters/x", 404, []string{"&lt;b&gt;nobody"}, []string{"<b>nobody"}},
		{"submitter refuses a query", "/submitters/Sandberg?limit=5", "/v1/submitters/x", 400, []string{"<code>limit</code>"}, nil},
		{"submitter name too long", "/submitters/" + strings.Repeat("s", 201), "/v1/submitters/x", 400, []string{"<code>name</code>"}, nil},
		{"the run list links models", "/", "/v1/runs", 200, []string{`<a href="/models/` + fara.Model.Name + `">`}, nil},
		{"a run links its model", "/runs/" + fara.ID, "/v1/runs/" + fara.ID, 200, []string{`<dd translate="no"><a href="/models/` + fara.Model.Name + `">`}, nil},
		{"run links its submitter", "/runs/" + nemotron.ID, "/v1/runs/" + nemotron.ID, 200, []string{`<a href="/submitters/Sandberg">Sandberg</a>`}, nil},
		{"calculator form", "/calculator", "/v1/calculator/decode", 200, []string{`<form class="filters" method="get" action="/calculator"`,
			`<option value="` + fara.ID + `">`, `<a href="/calculator">Calculator</a>`, "Choose a run, a context"}, nil},
		{"calculator at a measured cell", "/calculator?run_id=" + nemotron.ID + "&context_tokens=16384&concurrency=8", "/v1/calculator/decode", 200, []string{
			`<option value="` + nemotron.ID + `" selected>`, `<data value="427.5">428</data>`, "427 – 428", "measured",
			`<a href="/v1/calculator/decode?concurrency=8&amp;context_tokens=16384&amp;run_id=` + nemotron.ID + `">JSON</a>`,
			`<a href="/widget/calculator?run=` + nemotron.ID + `">`}, nil},
		{"calculator with a price", "/calculator?run_id=" + nemotron.ID + "&context_tokens=16384&concurrency=8&gpu_hour_usd=0.5", "/v1/calculator/decode", 200, []string{"USD per million output tokens"}, nil},
		{"calculator keeps what the form does not show", "/calculator?run_id=" + nemotron.ID + "&context_tokens=16384&concurrency=8&rough=true", "/v1/calculator/decode", 200,
			[]string{`name="rough" value="true" checked`, "Across generations (a rough estimate, ±"}, []string{`type="hidden" name="rough"`}},
		{"calculator beyond the data", "/calculator?run_id=" + nemotron.ID + "&context_tokens=32768&concurrency=4&target_gpu=H100", "/v1/calculator/decode", 422, []string{`role="alert"`, `<select name="run_id"`}, nil},
		{"calculator unknown run", "/calculator?run_id=rnope&context_tokens=0&concurrency=1", "/v1/calculator/decode", 404, []string{`role="alert"`, "rnope"}, nil},
		{"calculator without a cell", "/calculator?run_id=" + nemotron.ID, "/v1/calculator/decode", 400, []string{"<code>context_tokens</code>", "<code>concurrency</code>"}, nil},
		{"calculator refuses", "/calculator?run_id=" + nemotron.ID + "&context_tokens=0&concurrency=1&theme=dark", "/v1/calculator/decode", 400, []string{"<code>theme</code>"}, nil},
		{"calculator escapes", "/calculator?run_id=" + nemotron.ID + "&context_tokens=0&concurrency=1&target_gpu=%3Cb%3E", "/v1/calculator/decode", 0, []string{"&lt;b&gt;"}, []string{"<b>"}},
		{"planner form", "/planner", "/v1/planner", 200, []string{`action="/planner"`, `<a href="/planner">Planner</a>`, "Give a context"}, nil},
		{"planner options", "/planner?context_tokens=16384&min_per_request_tok_s=20&users=100", "/v1/planner", 200, []string{
			`<a href="/runs/` + nemotron.ID + `">`, `<a href="/v1/planner?context_tokens=16384&amp;min_per_request_tok_s=20&amp;users=100">JSON</a>`,
			"Instances", `<td data-label="Basis">interpolated</td>`, "not surely", "under the 20 asked", `<div class="scroll">`}, nil},
		{"planner scaled", "/planner?context_tokens=0&min_per_request_tok_s=10&include_scaled=true", "/v1/planner", 200, []string{`(scaled from <span translate="no">RTX 3`, `name="include_scaled" value="true" checked`}, []string{"scaled from 0x"}},
		{"planner from another model's run", "/planner?context_tokens=16384&min_per_request_tok_s=30&model=fara&include_scaled_model=true", "/v1/planner", 200,
			[]string{`<span translate="no">RTX 3090</span> <span class="muted">(from <span translate="no">cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit</span>)</span>`, `name="include_scaled_model" value="true" checked`, "scaled_model"}, nil},
		{"planner none", "/planner?context_tokens=0&min_per_request_tok_s=10&model=nothing-like-it", "/v1/planner", 200, []string{"No run matches"}, nil},
		{"planner refuses", "/planner?context_tokens=0", "/v1/planner", 400, []string{"<code>min_per_request_tok_s</code>"}, nil},
		{"planner cost without a price", "/planner?context_tokens=0&min_per_request_tok_s=10&sort=cost", "/v1/planner", 0, []string{"<code>sort</code>"}, nil},
		{"leaderboard names model, engine and method", "/leaderboard?context_tokens=16384&concurrency=8", "/v1/leaderboard", 200, []string{
			`<th scope="col">Model</th><th scope="col">GPU</th><th scope="col">Engine</th><th scope="col">Method</th>`,
			`<td data-label="Model"><span translate="no"><a href="/models/` + fara.Model.Name + `">` + fara.Model.Name + `</a>`,
			`<td data-label="Engine" translate="no">` + fara.Engine.Name + ` ` + fara.Engine.Version + `</td><td data-label="Method"><span class="badge">sustained decode</span></td>`,
			`<td data-label="Model"><span translate="no"><a href="/models/` + nemotron.Model.Name + `">`}, nil},
		{"leaderboard predicted", "/leaderboard?context_tokens=20000&concurrency=6&predicted=true", "/v1/leaderboard", 200, []string{
			`name="predicted" value="true" checked`, `<th scope="col">Basis</th>`, `<td data-label="Basis">interpolated ±`, "(predicted: every run at this cell, by the calculator)",
			`<a href="/runs/` + nemotron.ID + `">`, `<a href="/runs/` + fara.ID + `">`}, []string{"No run measured"}},
		{"leaderboard in Chinese", "/leaderboard?context_tokens=16384&concurrency=8&lang=zh-Hant", "/v1/leaderboard", 200, []string{
			`<th scope="col">模型</th><th scope="col">GPU</th><th scope="col">引擎</th><th scope="col">測量方法</th>`}, nil},
		{"getting started", "/getting-started", "/v1/getting-started", 200, []string{`<a href="/v1/getting-started">JSON</a>`, `<a href="/getting-started">Getting started</a>`, `id="read"`, `id="submit"`, `id="embed"`,
			"llama-batched-bench", "vllm-bench", "grid-csv", "&lt;div data-matrixd-calculator", `<a href="/docs">API reference</a>`, `<a href="/openapi.yaml">openapi.yaml</a>`}, []string{"<div data-matrixd-calculator"}},
		{"getting started in Thai", "/getting-started?lang=th", "/v1/getting-started", 200, []string{"การอ่านเมทริกซ์"}, nil},
		{"getting started takes no query", "/getting-started?x=1", "/v1/getting-started", 400, []string{"<code>x</code>", "it takes none"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.page(t, tt.target, tt.api)
			body := rec.Body.String()
			if tt.wantStatus != 0 && rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %.1500s", rec.Code, tt.wantStatus, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %s\nbody: %.4000s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("body has %s", w)
				}
			}
		})
	}
	// A name's slashes are real ones: an encoded slash is refused, as
	// everywhere, never taken for one.
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/models/LeaderboardModel1%2FFara1.5-4B-AutoRound-W4A16-RTN", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("an encoded slash in a model's path: %d, want 404", rec.Code)
	}
}

// TestFavicon: pages link an SVG icon, and the /favicon.ico browsers ask
// for on their own leads to it instead of a 404.
func TestFavicon(t *testing.T) {
	e := newEnv(t, 0)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/favicon.svg", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(rec.Body.String(), "<svg ") {
		t.Errorf("/favicon.svg: %d %q %.80s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	rec = httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/favicon.ico", nil))
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/favicon.svg" {
		t.Errorf("/favicon.ico: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	for _, path := range []string{"/", "/models", "/widget/calculator"} {
		if body := e.page(t, path, "").Body.String(); !strings.Contains(body, `<link rel="icon" href="/favicon.svg" type="image/svg+xml">`) {
			t.Errorf("%s does not link the icon", path)
		}
	}
}

// TestEmptySite: on a store with no run, the run list says there are none
// yet and links how to submit one; with a filter it says none matches, as
// it does on a store with runs.
func TestEmptySite(t *testing.T) {
	empty, full := newEmptyEnv(t), newEnv(t, 0)
	if rec := empty.do(t, "GET", "/v1/runs", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"items":[]`) {
		t.Fatalf("GET /v1/runs on an empty store: %d %s", rec.Code, rec.Body)
	}
	const none, yet = "No run matches these filters.", "No runs yet"
	for _, tt := range []struct {
		name      string
		e         *env
		target    string
		want, not []string
	}{
		{"empty", empty, "/", []string{yet, `<a href="/getting-started#submit">`}, []string{none}},
		{"empty, sorted", empty, "/?sort=gpu&limit=10", []string{yet}, []string{none}},
		{"empty in Thai", empty, "/?lang=th", []string{"ยังไม่มีผลการวัด", `<a href="/getting-started#submit">`}, []string{none}},
		{"empty, filtered", empty, "/?gpu=RTX%203090", []string{none}, []string{yet}},
		{"empty, filtered by what the form hides", empty, "/?vram_gb_min=20", []string{none}, []string{yet}},
		{"runs, filtered", full, "/?model=nothing-like-it", []string{none}, []string{yet}},
	} {
		rec := tt.e.page(t, tt.target, "/v1/runs")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", tt.name, rec.Code)
		}
		for _, w := range tt.want {
			if !strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s: %s lacks %q", tt.name, tt.target, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s: %s says %q", tt.name, tt.target, w)
			}
		}
	}
}

// TestRunPagePrefill: a run page's prefill chart plots prompt tok/s by
// context with axis titles and their units and a scale of several labels;
// a run without prefill measurements says so instead of an empty table.
func TestRunPagePrefill(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	bare := fara
	bare.Title, bare.Prefill = "no prefill", nil
	stored, _, err := e.st.CreateRun(context.Background(), bare)
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.do(t, "GET", "/v1/runs/"+stored.ID+"/prefill", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"items":[]`) {
		t.Fatalf("the run's prefill: %d %s", rec.Code, rec.Body)
	}
	chart := regexp.MustCompile(`(?s)<svg role="img" aria-labelledby="prefill-title".*?</svg>`)
	yLabel := regexp.MustCompile(`<text class="axis" x="\d+" dx="-6" y="\d+" dy="4" text-anchor="end">([^<]+)</text>`)
	for _, lang := range []struct{ code, x, y string }{
		{"en", "context (tokens)", "prompt tok/s"},
		{"zh-Hant", "上下文（token）", "提示 tok/s"},
		{"th", "บริบท (โทเค็น)", "tok/s ของพรอมต์"},
	} {
		rec := e.page(t, "/runs/"+fara.ID+"?lang="+lang.code, "/v1/runs/"+fara.ID)
		svg := chart.FindString(rec.Body.String())
		if svg == "" {
			t.Fatalf("%s: no prefill chart", lang.code)
		}
		for _, title := range []string{lang.x, lang.y} {
			if !strings.Contains(svg, `class="axistitle"`) || !strings.Contains(svg, ">"+title+"</text>") {
				t.Errorf("%s: the prefill chart lacks the axis title %q", lang.code, title)
			}
		}
		if ticks := yLabel.FindAllStringSubmatch(svg, -1); len(ticks) < 3 || ticks[0][1] != "0" {
			t.Errorf("%s: the prefill chart's y labels are %q, want a scale from 0", lang.code, ticks)
		}
	}
	body := e.page(t, "/runs/"+fara.ID, "/v1/runs/"+fara.ID).Body.String()
	if !strings.Contains(body, `<data value="2347">2,347</data>`) {
		t.Errorf("the prefill table lacks a prompt tok/s value")
	}
	body = e.page(t, "/runs/"+stored.ID, "/v1/runs/"+stored.ID).Body.String()
	if !strings.Contains(body, `<p role="status" class="prefill-none">This run has no prefill measurements.</p>`) {
		t.Errorf("a run without prefill does not say so")
	}
	if strings.Contains(body, `<caption>Prefill</caption>`) || strings.Contains(body, `aria-labelledby="prefill-title"`) {
		t.Errorf("a run without prefill shows an empty prefill table or chart")
	}
}

// TestGettingStartedTwin: GET /v1/getting-started, the page's JSON twin,
// answers as openapi.yaml says; it names every import format the import
// operation takes, each as the page names it, and every attribute the
// widget reads; each operation it names is the contract's, with its
// summary.
func TestGettingStartedTwin(t *testing.T) {
	e := newEnv(t, 0)
	if rec := e.do(t, "GET", "/v1/getting-started?x=1", nil); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"x"`) {
		t.Errorf("a query: %d %s", rec.Code, rec.Body)
	}
	rec := e.do(t, "GET", "/v1/getting-started", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var g api.GettingStarted
	if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil {
		t.Fatal(err)
	}
	page := e.page(t, g.Page, "/v1/getting-started").Body.String()
	var formats []string
	for _, f := range g.Submit.Formats {
		formats = append(formats, string(f.Format))
		if f.Format != api.ImportFormatFormatPage && !strings.Contains(page, "<code>"+string(f.Format)+"</code>") {
			t.Errorf("the page does not name the format %s", f.Format)
		}
	}
	imp := e.spec.Paths.Find("/v1/runs/import").Post
	for _, ref := range imp.Parameters {
		if ref.Value.Name != "format" {
			continue
		}
		var want []string
		for _, v := range ref.Value.Schema.Value.Enum {
			want = append(want, v.(string))
		}
		slices.Sort(want)
		slices.Sort(formats)
		if !slices.Equal(formats, want) {
			t.Errorf("formats %v, the import operation takes %v", formats, want)
		}
	}
	script := httptest.NewRecorder()
	e.h.ServeHTTP(script, httptest.NewRequest(http.MethodGet, g.Embed.Script, nil))
	js := script.Body.String()
	read := regexp.MustCompile(`getAttribute\("(data-[a-z-]+)"\)`)
	var attrs, named []string
	for _, m := range read.FindAllStringSubmatch(js, -1) {
		attrs = append(attrs, m[1])
	}
	for _, a := range g.Embed.Attributes {
		named = append(named, a.Name)
	}
	for _, a := range attrs {
		if !slices.Contains(named, a) && a != "data-mounted" {
			t.Errorf("the widget reads %s, which the guide does not name", a)
		}
	}
	for _, a := range named {
		if !slices.Contains(attrs, a) {
			t.Errorf("the guide names %s, which the widget does not read", a)
		}
	}
	for _, op := range slices.Concat(g.Read, g.Submit.Operations, g.Reference) {
		item := e.spec.Paths.Find(op.Path)
		if item == nil || item.GetOperation(string(op.Method)) == nil || item.GetOperation(string(op.Method)).Summary != op.Summary {
			t.Errorf("%s %s %q is not the contract's", op.Method, op.Path, op.Summary)
		}
	}
	if script.Code != http.StatusOK || e.page(t, g.Embed.Page, "").Code != http.StatusOK {
		t.Errorf("%s: %d; %s does not answer", g.Embed.Script, script.Code, g.Embed.Page)
	}
	for _, line := range strings.Split(strings.TrimSpace(g.Embed.Snippet), "\n") {
		if !strings.Contains(html.UnescapeString(page), line) {
			t.Errorf("the page does not show the snippet's %s", line)
		}
	}
}
