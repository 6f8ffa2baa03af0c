package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	fara     = "fara1.5-4b-autoround-rtx3060"
	nemotron = "nemotron-nano-12b-v2-awq-rtx3090"
	nemoCmd  = "vllm serve cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit --max-model-len 131072 --gpu-memory-utilization 0.94 --max-num-seqs 128 --enable-prefix-caching --trust-remote-code --kv-cache-dtype int4_per_token_head --attention-backend TRITON_ATTN"
)

func seed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("seeds", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func golden(t testing.TB, name string) store.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r store.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func mustParse(t *testing.T, b []byte) store.Run {
	t.Helper()
	r, err := ParsePage(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sameRun fails the test with the first differing JSON line when a and b
// differ.
func sameRun(t *testing.T, got, want store.Run) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("runs differ at JSON line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("runs differ (JSON lengths %d and %d lines)", len(gl), len(wl))
}

// The golden files were written once with -update and then checked against
// the pages cell by cell (see the report that came with this package).
func TestParsePageGolden(t *testing.T) {
	for _, name := range []string{fara, nemotron} {
		t.Run(name, func(t *testing.T) {
			r := mustParse(t, seed(t, name))
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sameRun(t, r, golden(t, name))
		})
	}
}

func f64(v float64) *float64 { return &v }
func intp(v int) *int        { return &v }
func boolp(v bool) *bool     { return &v }

func decodeCell(r store.Run, ctx, conc int) store.DecodeCell {
	for _, c := range r.Decode {
		if c.ContextTokens == ctx && c.Concurrency == conc {
			return c
		}
	}
	return store.DecodeCell{}
}

func TestParsePageValues(t *testing.T) {
	runs := map[string]store.Run{}
	for _, name := range []string{fara, nemotron} {
		runs[name] = mustParse(t, seed(t, name))
	}
	const k = 1024
	tests := []struct {
		name string
		seed string
		got  func(r store.Run) any
		want any
	}{
		{"fara 128K×1 requests queued", fara, func(r store.Run) any { return decodeCell(r, 128*k, 1) }, store.DecodeCell{
			ContextTokens: 128 * k, Concurrency: 1, Status: store.StatusRequestsQueued,
			TotalTokS: f64(30.7), PerRequestTokS: f64(34.0), TTFTMs: f64(3439), TBTMs: f64(29.4),
			AvgActiveRequests: f64(0.9), CompletedRequests: intp(0), OutputTokens: intp(921), DurationS: f64(30.0),
		}},
		{"fara 248K×1 over capacity with values", fara, func(r store.Run) any { return decodeCell(r, 248*k, 1) }, store.DecodeCell{
			ContextTokens: 248 * k, Concurrency: 1, Status: store.StatusOverCapacity,
			AvgActiveRequests: f64(0.7), CompletedRequests: intp(0), OutputTokens: intp(0), DurationS: f64(30.0),
		}},
		{"fara 248K×4 over capacity, all dashes", fara, func(r store.Run) any { return decodeCell(r, 248*k, 4) }, store.DecodeCell{
			ContextTokens: 248 * k, Concurrency: 4, Status: store.StatusOverCapacity,
		}},
		{"fara 0×32 thousands", fara, func(r store.Run) any { return decodeCell(r, 0, 32) }, store.DecodeCell{
			Concurrency: 32, Status: store.StatusValid, TotalTokS: f64(1053.3), PerRequestTokS: f64(33.2),
			TTFTMs: f64(1002), TBTMs: f64(30.1), AvgActiveRequests: f64(32.0), CompletedRequests: intp(0),
			OutputTokens: intp(31584), DurationS: f64(30.0),
		}},
		{"nemotron 0×128 requests queued", nemotron, func(r store.Run) any { return decodeCell(r, 0, 128) }, store.DecodeCell{
			Concurrency: 128, Status: store.StatusRequestsQueued, TotalTokS: f64(1214.7), PerRequestTokS: f64(18.4),
			TTFTMs: f64(1024), TBTMs: f64(54.3), AvgActiveRequests: f64(67.0), CompletedRequests: intp(0),
			OutputTokens: intp(36381), DurationS: f64(29.9),
		}},
		{"nemotron 120K×8", nemotron, func(r store.Run) any { return decodeCell(r, 120*k, 8) }, store.DecodeCell{
			ContextTokens: 120 * k, Concurrency: 8, Status: store.StatusValid, TotalTokS: f64(160.2), PerRequestTokS: f64(17.2),
			TTFTMs: f64(7670), TBTMs: f64(58.1), AvgActiveRequests: f64(8.0), CompletedRequests: intp(0),
			OutputTokens: intp(4800), DurationS: f64(30.0),
		}},
		{"fara prefill 128K", fara, func(r store.Run) any { return r.Prefill[len(r.Prefill)-1] }, store.PrefillCell{
			ContextTokens: 128 * k, Status: store.StatusValid, PromptTokS: f64(601), TTFTMs: f64(212786),
		}},
		{"nemotron prefill 120K", nemotron, func(r store.Run) any { return r.Prefill[len(r.Prefill)-1] }, store.PrefillCell{
			ContextTokens: 120 * k, Status: store.StatusValid, PromptTokS: f64(1228), TTFTMs: f64(100611),
		}},
		{"fara cell counts", fara, func(r store.Run) any { return [2]int{len(r.Decode), len(r.Prefill)} }, [2]int{48, 5}},
		{"nemotron cell counts", nemotron, func(r store.Run) any { return [2]int{len(r.Decode), len(r.Prefill)} }, [2]int{40, 5}},
		{"fara model", fara, func(r store.Run) any { return r.Model }, store.Model{Name: "LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN", Quantization: "AutoRound W4A16"}},
		{"nemotron model", nemotron, func(r store.Run) any { return r.Model }, store.Model{Name: "cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit", Quantization: "AWQ 4-bit"}},
		{"fara title", fara, func(r store.Run) any { return r.Title }, "Fara1.5-4B-AutoRound-W4A16-RTN on RTX 3060 12GB"},
		{"fara submitter", fara, func(r store.Run) any { return r.Submitter }, ""},
		{"nemotron submitter", nemotron, func(r store.Run) any { return r.Submitter }, "Sandberg"},
		{"nemotron tool from byline", nemotron, func(r store.Run) any { return [2]string{r.Benchmark.Tool, r.Benchmark.ToolVersion} }, [2]string{"llm-inference-bench", "v0.8.0"}},
		{"fara tool from Run", fara, func(r store.Run) any { return [2]string{r.Benchmark.Tool, r.Benchmark.ToolVersion} }, [2]string{"llm-inference-bench", "v0.8.0"}},
		{"fara hardware", fara, func(r store.Run) any { return r.Hardware }, store.Hardware{
			Type: "Discrete GPU", GPU: "RTX 3060", GPUCount: intp(1), VRAMGB: f64(12), CPU: "Intel Xeon E5-2680 v4", CPUCores: intp(14),
			RAMGB: f64(32), OS: "Ubuntu 24.04.5", DriverVersion: "580.178.04", PowerLimitW: f64(170), PCIe: "Gen3 x16",
		}},
		{"nemotron hardware", nemotron, func(r store.Run) any { return r.Hardware }, store.Hardware{
			Type: "Discrete GPU", GPU: "RTX 3090", GPUCount: intp(1), VRAMGB: f64(24), CPU: "AMD Ryzen 9 7900X", CPUCores: intp(12),
			RAMGB: f64(32), OS: "Ubuntu 24.04.5", DriverVersion: "595.99.02", PowerLimitW: f64(350), PCIe: "Gen4 x16",
		}},
		{"nemotron engine", nemotron, func(r store.Run) any { return r.Engine }, store.Engine{
			Name: "vllm", Version: "0.32.0", Quantization: "AWQ 4-bit", Backend: "cuda", Build: "vllm/vllm-openai:v0.32.0-x86_64",
		}},
		{"fara benchmark", fara, func(r store.Run) any { return r.Benchmark }, store.Benchmark{
			Tool: "llm-inference-bench", ToolVersion: "v0.8.0", ServedModel: "bench", Revision: "main", DecodeTest: "Fixed duration",
			PrefillMode: "Measured during decode warm-up", SecondsPerMeasurement: f64(30), MaxOutputTokens: intp(8192),
		}},
		{"fara launch typed", fara, func(r store.Run) any {
			l := r.Launch
			return []any{*l.MaxModelLen, *l.GPUMemoryUtilization, *l.MaxNumSeqs, l.KVCacheDtype, l.AttentionBackend, *l.EnablePrefixCaching, l.Flags["language-model-only"]}
		}, []any{262144, 0.94, 128, "int4_per_token_head", "TRITON_ATTN", true, "true"}},
		{"nemotron max_model_len", nemotron, func(r store.Run) any { return *r.Launch.MaxModelLen }, 131072},
		{"fara notes", fara, func(r store.Run) any { return r.Launch.Notes }, []string{
			"Untuned out-of-the-box baseline. Spec decode: none. KV cache: int4_per_token_head",
			"1x RTX 3060 12GB, stock 170 W limit, PCIe Gen3 x16 | Intel Xeon E5-2680 v4 14C | 32 GB DDR4-2400 | Ubuntu 24.04.5, NVIDIA driver 580.178.04",
		}},
		{"nemotron notes", nemotron, func(r store.Run) any { return r.Launch.Notes }, []string{
			"Untuned out-of-the-box baseline. Spec decode: none. KV cache: int4_per_token_head",
			"1x RTX 3090 24GB (Zagitta/gpu-unlock), 350 W limit (VBIOS max), PCIe Gen4 x16 | AMD Ryzen 9 7900X 12C | 32 GB DDR5 | Ubuntu 24.04.5, NVIDIA driver 595.99.02",
		}},
		{"fara command", fara, func(r store.Run) any { return r.Launch.Command }, "# Untuned out-of-the-box baseline. Spec decode: none. KV cache: int4_per_token_head\n" +
			"# 1x RTX 3060 12GB, stock 170 W limit, PCIe Gen3 x16 | Intel Xeon E5-2680 v4 14C | 32 GB DDR4-2400 | Ubuntu 24.04.5, NVIDIA driver 580.178.04\n" +
			"vllm serve LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN --max-model-len 262144 --gpu-memory-utilization 0.94 --max-num-seqs 128 --enable-prefix-caching --trust-remote-code --language-model-only --kv-cache-dtype int4_per_token_head --attention-backend TRITON_ATTN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(runs[tt.seed]); !reflect.DeepEqual(got, tt.want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

// toText turns a page's markdown into text as a browser copies it: table
// cells and list items lose their separators, and a table's caption and
// header row each keep a line.
func toText(page string) string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		i := strings.Index(l, "|")
		if i < 0 || !strings.HasSuffix(l, "|") {
			out = append(out, strings.TrimPrefix(l, "- "))
			continue
		}
		if i > 0 {
			out = append(out, l[:i])
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l[i:], "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if strings.Trim(strings.Join(cells, ""), "-") == "" {
			continue
		}
		out = append(out, strings.Join(cells, ""))
	}
	return strings.Join(out, "\n")
}

func groupInt(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func dec1(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	n, _ := strconv.Atoi(whole)
	return groupInt(n) + "." + frac
}

func orDashF(v *float64, format func(float64) string, unit string) string {
	if v == nil {
		return "—"
	}
	return format(*v) + unit
}

func orDashI(v *int) string {
	if v == nil {
		return "—"
	}
	return groupInt(*v)
}

func statusText(s string) string {
	return map[string]string{store.StatusValid: "Valid", store.StatusRequestsQueued: "Requests queued", store.StatusOverCapacity: "Over capacity"}[s]
}

// markdownTables renders a run's summary grid and All measurements table
// as markdown, the way the page prints them.
func markdownTables(r store.Run) (gridRows, tableRows []string) {
	var ctxs, levels []int
	for _, c := range r.Decode {
		ctxs, levels = append(ctxs, c.ContextTokens), append(levels, c.Concurrency)
	}
	slices.Sort(ctxs)
	slices.Sort(levels)
	ctxs, levels = slices.Compact(ctxs), slices.Compact(levels)
	label := func(n int) string {
		if n == 0 {
			return "0"
		}
		return strconv.Itoa(n/1024) + "K"
	}
	ms := func(f float64) string { return groupInt(int(f)) }
	head := "| Context |"
	sep := "|---|"
	for _, l := range levels {
		head += " " + strconv.Itoa(l) + " |"
		sep += "---|"
	}
	gridRows = append(gridRows, head, sep)
	for _, ctx := range ctxs {
		row := "| " + label(ctx) + " |"
		for _, l := range levels {
			c := decodeCell(r, ctx, l)
			cell := ""
			if c.TotalTokS != nil {
				cell += dec1(*c.TotalTokS)
			}
			if c.Status != store.StatusValid {
				cell += statusText(c.Status)
			}
			if c.TTFTMs != nil {
				cell += ms(*c.TTFTMs) + " ms TTFT"
			}
			row += " " + cell + " |"
		}
		gridRows = append(gridRows, row)
	}
	tableRows = append(tableRows,
		"| Phase | Context | Requests at once | Status | Total tok/s | Per request tok/s | TTFT | Time between tokens | Average active requests | Completed requests | Output tokens | Measured for |",
		"|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.Prefill {
		tableRows = append(tableRows, "| Prefill | "+label(p.ContextTokens)+" | 1 | "+statusText(p.Status)+" | "+
			orDashF(p.PromptTokS, dec1, "")+" | — | "+orDashF(p.TTFTMs, ms, " ms")+" | — | — | 1 | — | — |")
	}
	for _, c := range r.Decode {
		tableRows = append(tableRows, strings.Join([]string{"| Sustained decode", label(c.ContextTokens), strconv.Itoa(c.Concurrency),
			statusText(c.Status), orDashF(c.TotalTokS, dec1, ""), orDashF(c.PerRequestTokS, dec1, ""), orDashF(c.TTFTMs, ms, " ms"),
			orDashF(c.TBTMs, dec1, " ms"), orDashF(c.AvgActiveRequests, dec1, ""), orDashI(c.CompletedRequests),
			orDashI(c.OutputTokens), orDashF(c.DurationS, dec1, " s") + " |"}, " | "))
	}
	return gridRows, tableRows
}

// toMarkdown rebuilds the nemotron text page with "- " lists and markdown
// tables rendered from the expected run, captions glued to the header rows
// as on the fara page.
func toMarkdown(page string, r store.Run) string {
	gridRows, tableRows := markdownTables(r)
	var out []string
	lines := strings.Split(page, "\n")
	kv, seen := false, map[string]bool{}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case (l == "Hardware" || l == "Engine" || l == "Run") && !seen[l]:
			seen[l], kv = true, true
			out = append(out, l)
		case l == "Launch command":
			kv = false
			out = append(out, l)
		case kv && l != "":
			out = append(out, "- "+l)
		case strings.HasPrefix(l, "Context1"):
			out[len(out)-1] += gridRows[0]
			out = append(out, gridRows[1:]...)
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
			}
		case strings.HasPrefix(l, "PhaseContext"):
			out[len(out)-1] += tableRows[0]
			out = append(out, tableRows[1:]...)
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
			}
		default:
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestParsePageLayouts(t *testing.T) {
	faraPage, nemoPage := string(seed(t, fara)), string(seed(t, nemotron))
	faraRun, nemoRun := golden(t, fara), golden(t, nemotron)
	chrome := "Startseite\nSpeed test matrix\nRechner\nBerichte\nホーム · レポート\nМатрица тестов\n\n"
	tests := []struct {
		name string
		page string
		want store.Run
	}{
		{"fara as copied text", toText(faraPage), faraRun},
		{"nemotron as markdown", toMarkdown(nemoPage, nemoRun), nemoRun},
		{"fara with chrome", chrome + faraPage, faraRun},
		{"nemotron with chrome", chrome + nemoPage, nemoRun},
		{"fara CRLF", strings.ReplaceAll(faraPage, "\n", "\r\n"), faraRun},
		{"nemotron CRLF", strings.ReplaceAll(nemoPage, "\n", "\r\n"), nemoRun},
		{"nemotron markdown CRLF", strings.ReplaceAll(toMarkdown(nemoPage, nemoRun), "\n", "\r\n"), nemoRun},
		{"fara text with BOM and no-break spaces", "\uFEFF" + strings.ReplaceAll(toText(faraPage), "30 s", "30\u00a0s"), faraRun},
		{"nemotron with markdown headings", strings.NewReplacer("\nHardware\n", "\n## Hardware\n", "\nRun\n", "\n## Run\n").Replace(nemoPage), nemoRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameRun(t, mustParse(t, []byte(tt.page)), tt.want)
		})
	}
	// The conversions must really change the layout, or the test proves
	// nothing.
	if strings.Contains(toText(faraPage), "|\n") || !strings.Contains(toText(faraPage), "Sustained decode128K1Requests queued30.734.03,439 ms29.4 ms0.9092130.0 s") {
		t.Fatal("toText left markdown behind")
	}
	if md := toMarkdown(nemoPage, nemoRun); !strings.Contains(md, "| Sustained decode | 0 | 128 | Requests queued | 1,214.7 | 18.4 | 1,024 ms | 54.3 ms | 67.0 | 0 | 36,381 | 29.9 s |") ||
		!strings.Contains(md, "| 0 | 94.238 ms TTFT |") || !strings.Contains(md, "- VRAM\n- 24 GB") {
		t.Fatal("toMarkdown did not render markdown")
	}
}

// lineOf returns the number of the first line of page containing s.
func lineOf(t *testing.T, page, s string) int {
	t.Helper()
	for i, l := range strings.Split(page, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", s)
	return 0
}

func replaceOnce(t *testing.T, page, old, new string) string {
	t.Helper()
	if strings.Count(page, old) != 1 {
		t.Fatalf("%q occurs %d times", old, strings.Count(page, old))
	}
	return strings.Replace(page, old, new, 1)
}

func cutAfter(t *testing.T, page, s string) string {
	t.Helper()
	i := strings.Index(page, s)
	if i < 0 {
		t.Fatalf("no %q", s)
	}
	return page[:i+len(s)]
}

func TestParsePageErrors(t *testing.T) {
	faraPage, nemoPage := string(seed(t, fara)), string(seed(t, nemotron))
	faraText := toText(faraPage)
	tests := []struct {
		name     string
		page     func(t *testing.T) string
		line     func(t *testing.T, page string) int
		contains string
	}{
		{"more requests active than at once (markdown)",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "| 32.0 ms | 8.0 | 0 | 8,368 |", "| 32.0 ms | 9.0 | 0 | 8,368 |")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "| 9.0 | 0 | 8,368 |") }, "9 requests were active on average, more than the 8"},
		{"more requests active than at once (text)",
			func(t *testing.T) string {
				return replaceOnce(t, nemoPage, "Sustained decode16K8Valid427.549.83,384 ms20.1 ms8.0012,824", "Sustained decode16K8Valid427.549.83,384 ms20.1 ms9.0012,824")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "20.1 ms9.0012,824") }, "9 requests were active on average, more than the 8"},
		{"grid total disagrees (markdown)",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "| 0 | 83.185 ms TTFT |", "| 0 | 83.285 ms TTFT |")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "| 0 | 83.2") }, "total tok/s 83.2"},
		{"grid TTFT disagrees (text)",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "16K86.2753 ms TTFT", "16K86.2754 ms TTFT") },
			func(t *testing.T, p string) int { return lineOf(t, p, "16K86.2754") }, "TTFT 754 ms"},
		{"grid status disagrees (text)",
			func(t *testing.T) string {
				return replaceOnce(t, nemoPage, "1,214.7Requests queued1,024 ms TTFT", "1,214.71,024 ms TTFT")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "094.238 ms TTFT") }, "0 × 128 is valid"},
		{"table value disagrees with the grid",
			func(t *testing.T) string {
				return replaceOnce(t, nemoPage, "Sustained decode32K8Valid338.6", "Sustained decode32K8Valid338.7")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "32K79.8") }, "says 338.7"},
		{"prefill summary disagrees",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "16K context1,9578,237 ms TTFT", "16K context1,9588,237 ms TTFT")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "16K context") }, "prompt tok/s 1958"},
		{"declared context count disagrees (glued)",
			func(t *testing.T) string { return replaceOnce(t, faraPage, "W4A166 contexts", "W4A167 contexts") },
			func(t *testing.T, p string) int { return 3 }, "declares 7 contexts"},
		{"declared context count disagrees (text)",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "4-bit5 contexts", "4-bit6 contexts") },
			func(t *testing.T, p string) int { return lineOf(t, p, "4-bit6 contexts") }, "declares 6 contexts, All measurements has 5"},
		{"declared concurrency levels disagree",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "× 8 concurrency", "× 9 concurrency") },
			func(t *testing.T, p string) int { return lineOf(t, p, "× 9 concurrency") }, "declares 9 concurrency levels"},
		{"context range disagrees",
			func(t *testing.T) string { return replaceOnce(t, faraPage, "(0–248K)", "(0–256K)") },
			func(t *testing.T, p string) int { return 3 }, "context range 0–256K"},
		{"prefill list disagrees",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "64K, 120K", "64K, 128K") },
			func(t *testing.T, p string) int { return lineOf(t, p, "prefill at") }, "prefill at 8K, 16K, 32K, 64K, 128K"},
		{"summary quantization differs from the Engine section",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "- AutoRound W4A16\n", "- AutoRound W8A16\n")
			},
			func(t *testing.T, p string) int { return 3 }, "quantization does not match"},
		{"run-together row stays ambiguous",
			func(t *testing.T) string {
				return replaceOnce(t, faraText, "Sustained decode248K1Over capacity————0.70030.0 s", "Sustained decode248K1Over capacity————0.712330.0 s")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "0.712330.0 s") }, "ambiguous: 2 readings pass the checks: Completed requests 1, Output tokens 23 or Completed requests 12, Output tokens 3"},
		{"run-together row with no consistent reading",
			func(t *testing.T) string { return replaceOnce(t, faraText, "0.9092130.0 s", "0.9099930.0 s") },
			func(t *testing.T, p string) int { return lineOf(t, p, "0.9099930.0 s") }, "no reading of the row passes the checks"},
		{"unreadable run-together row",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "1.002,82430.0 s", "1.002,8x430.0 s") },
			func(t *testing.T, p string) int { return lineOf(t, p, "2,8x4") }, "cannot read"},
		{"unreadable markdown cell",
			func(t *testing.T) string { return replaceOnce(t, faraPage, "| 2,492 |", "| 2,49 |") },
			func(t *testing.T, p string) int { return lineOf(t, p, "| 2,49 |") }, `cannot read Output tokens "2,49"`},
		{"duplicated row",
			func(t *testing.T) string {
				row := "Sustained decode16K1Valid86.286.2753 ms11.6 ms1.002,58430.0 s\n"
				return replaceOnce(t, nemoPage, row, row+row)
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "Sustained decode16K1Valid") + 1 }, "a second row for 16K × 1"},
		{"truncated at a row boundary",
			func(t *testing.T) string { return cutAfter(t, nemoPage, "16.009,00830.0 s\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "64K69.3") }, "64K × 32 but All measurements has no row"},
		{"truncated inside a row",
			func(t *testing.T) string {
				return cutAfter(t, nemoPage, "Sustained decode120K4Valid120.928.34,267 ms35.4 ms4.003,624")
			},
			func(t *testing.T, p string) int { return strings.Count(p, "\n") + 1 }, "cannot read Measured for"},
		{"truncated markdown table",
			func(t *testing.T) string {
				return cutAfter(t, faraPage, "| Sustained decode | 128K | 4 | Valid | 55.7 | 12.4 | 7,956 ms | 80.5 ms | 4.0 | 0 | 1,668 | 30.0 s |\n")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "| 128K | 30.7") }, "128K × 8 but All measurements has no row"},
		{"truncated before All measurements",
			func(t *testing.T) string { return cutAfter(t, nemoPage, "so it mostly excludes prefill.\n") },
			func(t *testing.T, p string) int { return strings.Count(p, "\n") + 1 }, "without an All measurements table"},
		{"empty", func(t *testing.T) string { return "" }, func(t *testing.T, p string) int { return 0 }, "not a matrix-run page"},
		{"random text",
			func(t *testing.T) string { return "Lorem ipsum dolor sit amet,\n| a | b |\n0123 | 4,5\n" },
			func(t *testing.T, p string) int { return 0 }, "not a matrix-run page"},
		{"a pasted serving benchmark block",
			func(t *testing.T) string {
				return "# bench\n\n```\n============ Serving Benchmark Result ============\nMax request concurrency: 4\n```\n"
			},
			func(t *testing.T, p string) int { return 0 }, "line 4 is a \"Serving Benchmark Result\" block, which format=vllm-bench reads"},
		{"heading only", func(t *testing.T) string { return "Speed test matrix\n" }, func(t *testing.T, p string) int { return 1 }, "no title"},
		{"byline names no known tool",
			func(t *testing.T) string {
				return replaceOnce(t, nemoPage, "llm-inference-bench v0.8.0", "mybench v0.8.0")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "by @") }, "cannot tell the submitter"},
		{"byline disagrees with the Benchmark tool",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "prefill at 8K, 16K, 32K, 64K, 128K\n", "prefill at 8K, 16K, 32K, 64K, 128K\nby @Sandbergguidellm v0.3Measured\n")
			},
			func(t *testing.T, p string) int { return 4 }, `benchmark tool "llm-inference-bench v0.8.0"`},
		{"launch blob without a launcher",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "580.178.04 vllm serve", "580.178.04 vlm serve")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "vlm serve") }, "no known launcher"},
		{"hardware key without value",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "VRAM\n24 GB\n", "VRAM\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "VRAM") }, "VRAM has no value"},
		{"bad VRAM",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "24 GB", "lots") },
			func(t *testing.T, p string) int { return lineOf(t, p, "lots") }, `VRAM "lots"`},
		{"no GPU",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "GPU\nRTX 3090\n", "") },
			func(t *testing.T, p string) int { return lineOf(t, p, "Hardware") }, "names no GPU"},
		{"unknown column in a text header",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "Measured for\n", "Measured forEnergy\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "All measurements") }, "no header row"},
		{"invalid UTF-8",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "RTX 3090\n", "RTX \xff3090\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "RTX \xff") }, "not valid UTF-8"},
		{"hardware heading missing (markdown)",
			func(t *testing.T) string { return replaceOnce(t, faraPage, "128K\nHardware\n", "128K\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "- Type") }, "the Hardware heading is missing: Type is a field of the Hardware section"},
		{"hardware heading missing (text)",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "\nHardware\n", "\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "Type") }, "the Hardware heading is missing: Type is a field of the Hardware section"},
		{"sustained decode heading missing (markdown)",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "Sustained decode\ntotal tok/s", "total tok/s")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "| Context | 1 |") }, "the Sustained decode heading is missing"},
		{"sustained decode heading missing (text)",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, "\nSustained decode\n", "\n") },
			func(t *testing.T, p string) int { return lineOf(t, p, "Context1248163264128") }, "the Sustained decode heading is missing"},
		{"sustained decode heading and grid header missing (markdown)",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "Sustained decode\ntotal tok/s · rows are context length, columns are simultaneous requests| Context | 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128 |\n", "")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "| 0 | 83.185 ms TTFT |") }, "has 9 cells, not 3 (is a heading missing?)"},
		{"sustained decode heading and grid header missing (text)",
			func(t *testing.T) string {
				return replaceOnce(t, nemoPage, "\nSustained decode\n\ntotal tok/s · rows are context length, columns are simultaneous requests\nContext1248163264128\n", "\n")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "094.238 ms TTFT") }, "(is a heading missing?)"},
		{"unreadable prefill summary cell (markdown)",
			func(t *testing.T) string {
				return replaceOnce(t, faraPage, "8K context2,3473,472 ms TTFT\n", "| Context | Prompt tok/s | TTFT |\n|---|---|---|\n| 8K | 2,34x | 3,472 ms |\n")
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "2,34x") }, `cannot read the prefill summary's prompt tok/s "2,34x"`},
		{"renamed column in a markdown header",
			func(t *testing.T) string { return replaceOnce(t, faraPage, "| Total tok/s |", "| Total tok/sec |") },
			func(t *testing.T, p string) int { return lineOf(t, p, "| Phase |") }, `unknown column "Total tok/sec" in the All measurements header (the known columns: Phase, Context, Requests at once, Status, Total tok/s,`},
		{"launch command missing, notes on their own lines",
			func(t *testing.T) string { return replaceOnce(t, nemoPage, nemoCmd+"\n", "") },
			func(t *testing.T, p string) int { return lineOf(t, p, "Launch command") }, "the launch command is missing (only its # notes are there)"},
		{"launch command missing from a one-line blob",
			func(t *testing.T) string {
				i := strings.Index(faraPage, " vllm serve ")
				j := strings.IndexByte(faraPage[i:], '\n')
				return faraPage[:i] + faraPage[i+j:]
			},
			func(t *testing.T, p string) int { return lineOf(t, p, "Launch command") }, "the launch command is missing (only its # notes are there)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := tt.page(t)
			_, err := ParsePage([]byte(page))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			if want := tt.line(t, page); pe.Line != want || !strings.Contains(pe.Msg, tt.contains) {
				t.Fatalf("got %q\nwant line %d containing %q", err, want, tt.contains)
			}
		})
	}
}

func TestParseDispatch(t *testing.T) {
	want := golden(t, nemotron)
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"page": seed(t, nemotron), "json": b, "indented json": append([]byte(" \n\t"), b...)} {
		t.Run(name, func(t *testing.T) {
			r, err := Parse(in)
			if err != nil {
				t.Fatal(err)
			}
			sameRun(t, r, want)
		})
	}
}

func TestSeeds(t *testing.T) {
	seeds := Seeds()
	var names []string
	for _, s := range seeds {
		names = append(names, s.Name)
		if !bytes.Equal(s.Data, seed(t, s.Name)) {
			t.Errorf("seed %s differs from its file", s.Name)
		}
		if _, err := Parse(s.Data); err != nil {
			t.Errorf("seed %s: %v", s.Name, err)
		}
	}
	if want := []string{fara, nemotron}; !slices.Equal(names, want) {
		t.Fatalf("seeds %v, want %v", names, want)
	}
	seeds[0].Data[0] = 'X'
	if Seeds()[0].Data[0] == 'X' {
		t.Fatal("Seeds shares its data between calls")
	}
}

func TestParsePageVariants(t *testing.T) {
	faraPage, nemoPage := string(seed(t, fara)), string(seed(t, nemotron))
	tests := []struct {
		name     string
		seed     string
		old, new string
		change   func(r *store.Run)
	}{
		{"prefill summary split by TTFT ≈ context / prompt tok/s", fara, "64K context994.064,442 ms TTFT", "64K context99464,442 ms TTFT", nil},
		{"summary on two lines", nemotron, "AWQ 4-bit5 contexts", "AWQ 4-bit\n5 contexts", nil},
		{"summary with separators", fara, "AutoRound W4A166 contexts", "AutoRound W4A16 · 6 contexts", nil},
		{"byline with separators", nemotron, "by @Sandbergllm-inference-bench v0.8.0Measured", "by @Sandberg · llm-inference-bench v0.8.0 · Measured", nil},
		{"byline checked against the Benchmark tool", fara, "64K, 128K\n", "64K, 128K\nby @Sandbergllm-inference-bench v0.8.0Measured\n",
			func(r *store.Run) { r.Submitter = "Sandberg" }},
		{"command in a fenced block with continuations", nemotron, nemoCmd,
			"```bash\n" + strings.ReplaceAll(nemoCmd, " --", " \\\n  --") + "\n```", nil},
		{"environment before the launcher in a one-line blob", fara, "580.178.04 vllm serve", "580.178.04 CUDA_VISIBLE_DEVICES=0 VLLM_USE_V1=1 vllm serve",
			func(r *store.Run) {
				r.Launch.Command = strings.Replace(r.Launch.Command, "vllm serve", "CUDA_VISIBLE_DEVICES=0 VLLM_USE_V1=1 vllm serve", 1)
			}},
		{"no-enable-prefix-caching", nemotron, "--enable-prefix-caching", "--no-enable-prefix-caching",
			func(r *store.Run) {
				r.Launch.Command = strings.Replace(r.Launch.Command, "--enable", "--no-enable", 1)
				r.Launch.EnablePrefixCaching = boolp(false)
				delete(r.Launch.Flags, "enable-prefix-caching")
				r.Launch.Flags["no-enable-prefix-caching"] = "true"
			}},
		{"hardware as a markdown table", nemotron, "Type\nDiscrete GPU\nGPU\nRTX 3090\nVRAM\n24 GB\n",
			"| Field | Value |\n|---|---|\n| Type | Discrete GPU |\n| GPU | RTX 3090 |\n| VRAM | 24 GB |\n", nil},
		{"unknown hardware keys are skipped in pairs", nemotron, "OS\nUbuntu 24.04.5\n", "Cooling\nWater\nOS\nUbuntu 24.04.5\nGPU count\n1\n", nil},
		{"hardware section wins over the notes", nemotron, "OS\nUbuntu 24.04.5\n", "OS\nUbuntu 24.04.5\nPower limit\n300 W\nDriver\n600.1\n",
			func(r *store.Run) { r.Hardware.PowerLimitW, r.Hardware.DriverVersion = f64(300), "600.1" }},
		{"model from --model", nemotron, "vllm serve cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit ", "vllm serve --model other/Model ",
			func(r *store.Run) {
				r.Launch.Command = strings.Replace(r.Launch.Command, "cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit", "--model other/Model", 1)
				r.Launch.Flags["model"] = "other/Model"
				r.Model.Name = "other/Model"
			}},
		{"no launch command: model from the title", nemotron,
			"Launch command\n\n# Untuned out-of-the-box baseline. Spec decode: none. KV cache: int4_per_token_head\n# 1x RTX 3090 24GB (Zagitta/gpu-unlock), 350 W limit (VBIOS max), PCIe Gen4 x16 | AMD Ryzen 9 7900X 12C | 32 GB DDR5 | Ubuntu 24.04.5, NVIDIA driver 595.99.02\n" + nemoCmd + "\n", "",
			func(r *store.Run) {
				r.Launch = store.Launch{}
				r.Model.Name = "NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit"
				r.Hardware.GPUCount, r.Hardware.PowerLimitW, r.Hardware.PCIe, r.Hardware.DriverVersion = nil, nil, "", ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := map[string]string{fara: faraPage, nemotron: nemoPage}[tt.seed]
			want := golden(t, tt.seed)
			if tt.change != nil {
				tt.change(&want)
			}
			sameRun(t, mustParse(t, []byte(replaceOnce(t, page, tt.old, tt.new))), want)
		})
	}
}

// TestRowsMustAddUp: a row read only one way is still checked against the
// page's redundancies, so a typo is an error naming its line.
func TestRowsMustAddUp(t *testing.T) {
	page := string(seed(t, fara))
	tests := []struct {
		name, old, new, want string
	}{
		{"output tokens", "| 83.1 | 83.4 | 85 ms | 12.0 ms | 1.0 | 0 | 2,492 | 30.0 s |", "| 83.1 | 83.4 | 85 ms | 12.0 ms | 1.0 | 0 | 9,492 | 30.0 s |", "output tokens 9492"},
		{"time between tokens", "| 83.1 | 83.4 | 85 ms | 12.0 ms | 1.0 | 0 | 2,492 | 30.0 s |", "| 83.1 | 83.4 | 85 ms | 19.0 ms | 1.0 | 0 | 2,492 | 30.0 s |", "per-request tok/s 83.4"},
		{"duration", "| 83.1 | 83.4 | 85 ms | 12.0 ms | 1.0 | 0 | 2,492 | 30.0 s |", "| 83.1 | 83.4 | 85 ms | 12.0 ms | 1.0 | 0 | 4,985 | 60.0 s |", "measured for 60 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(page, tt.old) {
				t.Fatalf("seed lacks %q", tt.old)
			}
			_, err := ParsePage([]byte(strings.Replace(page, tt.old, tt.new, 1)))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != 72 || !strings.Contains(pe.Msg, tt.want) {
				t.Fatalf("err = %v, want line 72 saying %q", err, tt.want)
			}
		})
	}
}
