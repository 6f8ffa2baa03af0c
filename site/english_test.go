package site_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store/storetest"
)

// langPages are the pages whose every sentence must be in the reader's
// language, each set up to say what it can: warnings, refusals, trust
// flags and checks, verdicts, planner limits, a 404 and 400s. In a path,
// {fara} and {nemotron} are the seed runs, {old} and {new} two runs of a
// series, {flagged} a copy of fara ten times too fast.
var langPages = []struct{ name, path string }{
	{"landing", "/"},
	{"run-fara", "/runs/{fara}"},
	{"run-nemotron", "/runs/{nemotron}"},
	{"run-series", "/runs/{new}"},
	{"run-flagged", "/runs/{flagged}"},
	{"run-corroborated", "/runs/{agree}"},
	{"run-disputed", "/runs/{disputed}"},
	{"leaderboard-disputed", "/leaderboard?context_tokens=0&concurrency=1&model=fara&include_flagged=true"},
	{"leaderboard", "/leaderboard"},
	{"leaderboard-cell", "/leaderboard?context_tokens=16384&concurrency=8"},
	{"leaderboard-hint", "/leaderboard?context_tokens=20000&concurrency=3"},
	{"leaderboard-predicted", "/leaderboard?context_tokens=20000&concurrency=6&predicted=true&include_flagged=true"},
	{"compare", "/compare?run_ids={old},{new}"},
	{"compare-flagged", "/compare?run_ids={fara},{flagged}"},
	{"models", "/models"},
	{"model", "/models/LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN"},
	{"hardware", "/hardware"},
	{"gpu", "/hardware/3090"},
	{"submitter", "/submitters/Sandberg"},
	{"organizations", "/organizations"},
	{"reports", "/reports"},
	{"report-fastest", "/reports/fastest-per-gpu-16k-x8"},
	{"report-versions", "/reports/engine-version-changes"},
	{"report-cheapest", "/reports/cheapest-100-users-20-tok-s"},
	{"benchmarks", "/benchmarks"},
	{"benchmark-tool", "/benchmarks/llama-batched-bench"},
	{"benchmark-class", "/benchmarks/serving_sweep"},
	{"calculator-form", "/calculator"},
	{"calculator", "/calculator?run_id={fara}&context_tokens=16384&concurrency=8"},
	{"calculator-warnings", "/calculator?run_id={flagged}&context_tokens=49152&concurrency=8"},
	{"calculator-limit", "/calculator?run_id={nemotron}&context_tokens=16384&concurrency=200"},
	{"calculator-refused", "/calculator?run_id={nemotron}&context_tokens=32768&concurrency=4&target_gpu=H100"},
	{"calculator-refused-gpu", "/calculator?run_id={nemotron}&context_tokens=16384&concurrency=8&target_gpu=RTX%20A2000"},
	{"calculator-refused-concurrency", "/calculator?run_id={fara}&context_tokens=16384&concurrency=40&vram_gb=48"},
	{"planner-form", "/planner"},
	{"planner", "/planner?context_tokens=16384&min_per_request_tok_s=30&users=100"},
	{"planner-limits", "/planner?context_tokens=16384&min_per_request_tok_s=30&users=100&include_scaled=true&max_ttft_ms=2000"},
	{"planner-refused", "/planner?context_tokens=16384&min_per_request_tok_s=20&include_scaled_model=true"},
	{"planner-refused-range", "/planner?context_tokens=16384&min_per_request_tok_s=20&users=0"},
	{"getting-started", "/getting-started"},
	{"widget", "/widget/calculator?run={fara}"},
	{"error-404", "/nonexistent"},
	{"error-400-escape", "/?gpu=%zz"},
	{"error-400-range", "/?limit=0"},
	{"error-400-enum", "/?sort=fastest"},
	{"error-404-run", "/runs/no-such-run"},
	{"error-400-type", "/?limit=many"},
	{"error-400-unknown", "/?colour=blue"},
	{"error-400-repeated", "/?gpu=a&gpu=b"},
	{"error-400-vram", "/?vram_gb_min=10&vram_gb_max=5"},
	{"error-400-vendor", "/hardware?vendor=Nobody"},
	{"error-400-cursor", "/leaderboard?context_tokens=16384&concurrency=8&cursor=bogus"},
	{"error-400-compare-one", "/compare?run_ids={fara}"},
	{"error-400-compare-twice", "/compare?run_ids={fara},{fara}"},
	{"error-404-compare", "/compare?run_ids={fara},rnosuch"},
	{"calculator-no-run", "/calculator?context_tokens=16384&concurrency=8"},
	{"planner-refused-sort", "/planner?context_tokens=16384&min_per_request_tok_s=20&sort=cost"},
	{"compare-three", "/compare?run_ids={fara},{old},{new}"},
	{"leaderboard-other-class", "/leaderboard?context_tokens=16384&concurrency=8&method_class=batched_burst"},
	{"planner-other-model", "/planner?context_tokens=16384&min_per_request_tok_s=20&include_scaled_model=true&model=fara"},
	{"calculator-other-gpu", "/calculator?run_id={nemotron}&context_tokens=16384&concurrency=8&target_gpu=RTX%204090"},
	{"calculator-rough", "/calculator?run_id={nemotron}&context_tokens=32768&concurrency=4&target_gpu=H100&rough=true"},
	{"landing-none", "/?model=nothing-at-all"},
}

// langStatus are the statuses of the pages of langPages that answer
// other than 200, so that each shows what it is listed for.
var langStatus = map[string]int{
	"calculator-refused": 422, "calculator-refused-gpu": 422, "calculator-refused-concurrency": 422, "planner-refused": 400, "planner-refused-range": 400, "error-404": 404,
	"error-400-escape": 400, "error-400-range": 400, "error-400-enum": 400, "error-404-run": 404,
}

// englishAllowed are the words a page in another language may show in
// Latin letters: units, initialisms and product names.
var englishAllowed = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`GPU GPUs KV TTFT TBT VRAM API JSON CSV ms GB KiB MiB TB USD kWh W K
		vLLM SGLang llama matrixd Atom RSS MCP Redoc OpenAPI HTML URL NVIDIA AMD Apple Intel CUDA ROCm
		TensorRT LLM curl HF Hugging Face GitHub English Bearer vllm`) {
		englishAllowed[w] = true
	}
}

// englishRuns are the runs of three or more consecutive English words in
// text: words of ASCII letters, not allowed ones; numbers, identifiers
// (max_model_len, v0.6, 16K, sort=cost) and allowed words neither count nor break a
// run; a letter of another script does. What is quoted (“…”, "…", 「…」)
// is a string cited as written, such as what a tool prints.
func englishRuns(text string) []string {
	var out []string
	text = quoted.ReplaceAllString(text, " ")
	segments := strings.FieldsFunc(text, func(r rune) bool { return r > unicode.MaxASCII && unicode.IsLetter(r) })
	for _, seg := range segments {
		var run []string
		flush := func() {
			if len(run) >= 3 {
				out = append(out, strings.Join(run, " "))
			}
			run = nil
		}
		for _, tok := range englishToken.FindAllString(seg, -1) {
			switch {
			case englishAllowed[tok] || !englishWord.MatchString(tok):
			default:
				run = append(run, tok)
			}
		}
		flush()
	}
	return out
}

var (
	englishToken = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9'’._/+=-]*`)
	englishWord  = regexp.MustCompile(`^[A-Za-z]+(['’][a-z]+)?$`)
	quoted       = regexp.MustCompile(`"[^"]*"|“[^”]*”|「[^」]*」`)
)

// visibleText is the text of a page a reader sees in its language: not
// the head (its title repeats the heading), scripts or styles, not
// <code>, <pre> or <kbd>, not what is marked translate="no" (names,
// identifiers, commands and data the page shows as given).
func visibleText(t *testing.T, page string) []string {
	t.Helper()
	// As a browser with scripts off reads it: <noscript> is text.
	doc, err := html.ParseWithOptions(strings.NewReader(page), html.ParseOptionEnableScripting(false))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "head", "script", "style", "code", "pre", "kbd", "template":
				return
			}
			for _, a := range n.Attr {
				if a.Key == "translate" && a.Val == "no" {
					return
				}
			}
		}
		if n.Type == html.TextNode {
			if s := strings.TrimSpace(n.Data); s != "" {
				out = append(out, s)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func TestEnglishRuns(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"the runs were measured by different methods", 1},
		{"測試結果 GPU TTFT 16K tok/s", 0},
		{"每秒 TTFT at 16K 超過 the limit", 0},
		{"ไม่มีการวัด max_model_len ของ run", 0},
		{"no speed can be predicted here", 1},
		{"ระบบ: no speed 可 be predicted", 0},
		{"RTX 3090 · llama.cpp · Q4_K_M", 0},
		{"含有「Serving Benchmark Result」區塊", 0},
		{"sort=cost 需要價格", 0},
	} {
		if got := englishRuns(c.text); len(got) != c.want {
			t.Errorf("%q: English runs %q, want %d", c.text, got, c.want)
		}
	}
}

// TestPagesSayNoEnglish renders every page of langPages in Traditional
// Chinese and Thai and fails on any run of three or more English words
// in what the reader sees: every sentence the API says (warnings,
// refusals, checks, verdicts, limits, problems) is rendered from its code
// in the page's language, and names the page shows as given are marked
// translate="no".
func TestPagesSayNoEnglish(t *testing.T) {
	e := newEnv(t, 0)
	series := e.regressedSeries(t)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	k := e.keys(t, "mallory", "alice", "eve")
	fast := storetest.Scaled(fara, func(int, int) float64 { return 10 })
	fast.Title = "fara, ten times"
	flagged := postRun(t, e, k["mallory"], fast, http.StatusCreated)
	if !flagged.Trust.Flagged {
		t.Fatalf("the tenfold copy is not flagged: %+v", flagged.Trust)
	}
	agree := postRun(t, e, k["alice"], storetest.Scaled(fara, func(int, int) float64 { return 1.05 }), http.StatusCreated)
	disputed := postRun(t, e, k["eve"], storetest.Scaled(fara, func(int, int) float64 { return 2 }), http.StatusCreated)
	if agree.Corroboration.Status != api.Corroborated || disputed.Corroboration.Status != api.Disputed {
		t.Fatalf("the copies are %s and %s, want corroborated and disputed", agree.Corroboration.Status, disputed.Corroboration.Status)
	}
	ids := strings.NewReplacer(
		"{fara}", fara.ID,
		"{nemotron}", e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID,
		"{old}", series[1].ID,
		"{new}", series[2].ID,
		"{flagged}", flagged.ID,
		"{agree}", agree.ID,
		"{disputed}", disputed.ID,
	)
	for _, lang := range []string{"zh-Hant", "th"} {
		for _, p := range langPages {
			target := ids.Replace(p.path)
			if strings.Contains(target, "?") {
				target += "&lang=" + url.QueryEscape(lang)
			} else {
				target += "?lang=" + url.QueryEscape(lang)
			}
			rec := e.get(t, target, "Accept", "text/html")
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("%s in %s: %d %s, want a page", p.name, lang, rec.Code, ct)
				continue
			}
			if want, ok := langStatus[p.name]; ok && rec.Code != want {
				t.Errorf("%s in %s: status %d, want %d: the page does not show what it is listed for", p.name, lang, rec.Code, want)
			}
			var found []string
			for _, text := range visibleText(t, rec.Body.String()) {
				found = append(found, englishRuns(text)...)
			}
			if len(found) > 0 {
				t.Errorf("%s in %s (%d): %d English runs:\n\t%s", p.name, lang, rec.Code, len(found), strings.Join(found, "\n\t"))
			}
		}
	}
}
