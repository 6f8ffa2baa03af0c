package site_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// longDecimal is a decimal with four or more significant digits
	// (29.98, 1,214.7): people read three.
	longDecimal = regexp.MustCompile(`(?:^|[^\d.,])(\d[\d,]*\.\d+)(?:[^\d.]|$)`)
	// ungrouped is a count of five or more digits written without its
	// groups (50000): a date's year and an identifier are not counts.
	ungrouped = regexp.MustCompile(`(?:^|[^\w.:/-])(\d{5,})(?:[^\w.:/-]|$)`)
)

// preformatted is a command as written, and the series' steps the API's
// own words (a verdict's why), not numbers the page writes.
var preformatted = regexp.MustCompile(`(?s)<pre.*?</pre>|<table class="cells steps">.*?</table>`)

func longDecimals(text string) []string {
	var out []string
	for _, m := range longDecimal.FindAllStringSubmatch(text, -1) {
		digits := strings.TrimLeft(strings.NewReplacer(",", "", ".", "").Replace(m[1]), "0")
		if len(digits) > 3 {
			out = append(out, m[1])
		}
	}
	return out
}

// TestPagesWriteContextsGroupedAndSpeedsToThreeDigits: in every language a
// context is written grouped (50,000, not 50000) and a speed with three
// significant digits (30.0 or 30, not 29.98) on the run page, the run list,
// the leaderboard, the calculator, the planner and the lists of runs.
func TestPagesWriteContextsGroupedAndSpeedsToThreeDigits(t *testing.T) {
	e := newEnv(t, 0)
	// A run whose contexts are not whole K: 50,000 and 1,152 tokens.
	r := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	r.ID, r.Title = "", r.Title+" (odd contexts)"
	r.Decode = slices.Clone(r.Decode)
	for i := range r.Decode {
		switch r.Decode[i].ContextTokens {
		case 16384:
			r.Decode[i].ContextTokens = 50000
		case 32768:
			r.Decode[i].ContextTokens = 1152 * 50
		}
	}
	stored, _, err := e.st.CreateRun(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	run := struct{ ID string }{stored.ID}
	for _, lang := range []string{"en", "zh-Hant", "th"} {
		for _, target := range []string{"/runs/" + run.ID, "/", "/leaderboard?context_tokens=50000&concurrency=2", "/models", "/hardware/RTX%203090",
			"/submitters/" + r.Submitter, "/calculator?run_id=" + run.ID + "&context_tokens=50000&concurrency=4",
			"/planner?context_tokens=50000&min_per_request_tok_s=20"} {
			page := e.page(t, target+sep(target)+"lang="+lang, "")
			if page.Code != 200 {
				t.Fatalf("%s: %d", target, page.Code)
			}
			text := textOfPage(preformatted.ReplaceAllString(page.Body.String(), ""))
			if raw := longDecimals(text); len(raw) > 0 {
				t.Errorf("%s in %s: more than three significant digits: %q", target, lang, raw)
			}
			if raw := ungrouped.FindAllString(text, -1); len(raw) > 0 {
				t.Errorf("%s in %s: numbers not grouped: %q", target, lang, raw)
			}
		}
	}
}

func sep(target string) string {
	if strings.Contains(target, "?") {
		return "&"
	}
	return "?"
}

// TestRunPageLeadsWithItsAnswer: a run page starts as the published page
// does (the summary line, by @submitter, the Measured badge), then the
// heatmap with each cell's TTFT, the Run block, the launch command with its
// comment lines (kept in the JSON too) and the prefill chart with every
// point labelled.
func TestRunPageLeadsWithItsAnswer(t *testing.T) {
	e := newEnv(t, 0)
	r := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	body := e.page(t, "/runs/"+r.ID, "").Body.String()
	order := []string{
		`<p class="summary">vllm · 0.32.0 · AWQ 4-bit · 5 contexts (0–120K) × 8 concurrency levels (1–128) · prefill at 8K, 16K, 32K, 64K, 120K</p>`,
		`by <a href="/submitters/Sandberg">@Sandberg</a> · <span translate="no">llm-inference-bench v0.8.0</span> · <span class="badge measured">Measured</span>`,
		`<svg role="img" aria-labelledby="decode-title"`,
		`class="v">94.2</text>`, `class="ttft">38</text>`,
		`<h2 id="runblock">Run</h2>`, `<dt>Served model</dt><dd translate="no">bench</dd>`, `<dt>Decode test</dt><dd translate="no">Fixed duration</dd>`,
		`<dt>Time per measurement</dt><dd>30 s</dd>`, `<dt>Max output</dt><dd>8,192 tokens</dd>`,
		"<code># Untuned out-of-the-box baseline. Spec decode: none. KV cache: int4_per_token_head\n# 1x RTX 3090 24GB",
		"\nvllm serve cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit",
		`<h2 id="prefill">`, `class="pv"`,
		`<h2 id="series">`,
	}
	at := 0
	for _, want := range order {
		i := strings.Index(body[at:], want)
		if i < 0 {
			t.Fatalf("the run page lacks %q after what came before it", want)
		}
		at += i
	}
	if n := strings.Count(body, `class="pv"`); n != len(r.Prefill) {
		t.Errorf("%d prefill points labelled, want %d", n, len(r.Prefill))
	}
	want := 0
	for _, c := range r.Decode {
		if c.TTFTMs != nil && c.TotalTokS != nil && *c.TotalTokS > 0 {
			want++
		}
	}
	if n := strings.Count(body, `class="ttft"`); n != want || want == 0 {
		t.Errorf("%d heatmap cells with a TTFT, want %d (every measured cell)", n, want)
	}
	var run struct {
		Launch struct {
			Command string `json:"command"`
		} `json:"launch"`
	}
	if err := json.Unmarshal(e.do(t, "GET", "/v1/runs/"+r.ID, nil).Body.Bytes(), &run); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(run.Launch.Command, "# Untuned out-of-the-box baseline.") || !strings.Contains(run.Launch.Command, "\nvllm serve ") {
		t.Errorf("the JSON's command lost its comment lines: %q", run.Launch.Command)
	}
	zh := e.page(t, "/runs/"+r.ID+"?lang=zh-Hant", "").Body.String()
	for _, want := range []string{"5 種上下文長度（0–120K）× 8 種並行數（1–128）", "預填於 8K", `由 <a href="/submitters/Sandberg">@Sandberg</a> 提交`, "實測", "8,192 個 token"} {
		if !strings.Contains(zh, want) {
			t.Errorf("zh-Hant run page lacks %q", want)
		}
	}
}
