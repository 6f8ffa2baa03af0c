package ingest

import (
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// summary is the line under the title: "vllm · 0.32.0 · AWQ 4-bit" and
// "5 contexts (0–120K) × 8 concurrency levels (1–128) · prefill at 8K, …",
// which text copied from a page runs together ("AWQ 4-bit5 contexts").
type summary struct {
	n                      int
	engine, version, quant string
	contexts               int
	ctxLo, ctxHi           int
	levels                 int
	concLo, concHi         int
	prefill                []int // nil when the line names none
}

// parseSummary reads the summary line(s). The count of contexts may be run
// into the field before it ("W4A166 contexts"); the Engine section's value
// for that field tells where it ends, or, when the section lacks it, the
// number of contexts in the table does.
func parseSummary(ls []line, eng store.Engine, tableContexts int) (summary, error) {
	texts := make([]string, len(ls))
	for i, l := range ls {
		texts[i] = l.text
	}
	s := strings.Join(texts, " · ")
	sum := summary{n: ls[0].n}
	bad := func(format string, args ...any) (summary, error) {
		return summary{}, errorf(sum.n, format, args...)
	}
	word := " contexts ("
	i := strings.Index(s, word)
	if i < 0 {
		word = " context ("
		i = strings.Index(s, word)
	}
	j := i
	for j > 0 && isDigit(s[j-1]) {
		j--
	}
	if i < 0 || j == i {
		return bad("the summary line does not say \"N contexts (…) × M concurrency levels (…)\"")
	}
	digits, prefix, rest := s[j:i], s[:j], s[i+len(word):]
	var ok bool
	if sum.ctxLo, sum.ctxHi, rest, ok = parseRange(rest, contextTokens); !ok {
		return bad("cannot read the summary's context range")
	}
	if rest, ok = cutAny(rest, " × ", " x "); !ok {
		return bad("cannot read the summary at %s", excerpt(rest))
	}
	k := 0
	for k < len(rest) && isDigit(rest[k]) {
		k++
	}
	levels, err := strconv.Atoi(rest[:k])
	if err != nil {
		return bad("cannot read the summary's number of concurrency levels")
	}
	sum.levels = levels
	if rest, ok = cutAny(rest[k:], " concurrency levels (", " concurrency level ("); !ok {
		return bad("cannot read the summary at %s", excerpt(rest))
	}
	level := func(s string) (int, bool) {
		n, err := atoi(s)
		return n, err == nil && whole(intLens, s)
	}
	if sum.concLo, sum.concHi, rest, ok = parseRange(rest, level); !ok {
		return bad("cannot read the summary's concurrency range")
	}
	if rest != "" {
		list, ok := strings.CutPrefix(rest, " · prefill at ")
		if !ok {
			return bad("unexpected %s after the concurrency levels", excerpt(rest))
		}
		for _, lab := range strings.Split(list, ",") {
			c, ok := contextTokens(strings.TrimSpace(lab))
			if !ok {
				return bad("cannot read the prefill context %q", strings.TrimSpace(lab))
			}
			sum.prefill = append(sum.prefill, c)
		}
	}

	trimmed := strings.TrimSpace(prefix)
	glued := trimmed != "" && trimmed == prefix && !strings.HasSuffix(prefix, "·")
	parts := strings.Split(strings.TrimSpace(strings.TrimSuffix(trimmed, "·")), "·")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	last := len(parts) - 1
	known, what := eng.Quantization, "quantization"
	switch last {
	case 0:
		known, what = eng.Name, "engine"
	case 1:
		known, what = eng.Version, "version"
	}
	type split struct {
		field string
		n     int
	}
	var splits []split
	for k := 1; k <= len(digits); k++ {
		ns := digits[len(digits)-k:]
		n, err := strconv.Atoi(ns)
		if err != nil || (len(ns) > 1 && ns[0] == '0') || (!glued && k < len(digits)) {
			continue
		}
		splits = append(splits, split{parts[last] + digits[:len(digits)-k], n})
	}
	if len(splits) > 1 {
		var fit []split
		for _, sp := range splits {
			if (known != "" && sp.field == known) || (known == "" && sp.n == tableContexts) {
				fit = append(fit, sp)
			}
		}
		if len(fit) != 1 {
			if known != "" {
				return bad("the summary's %s does not match the Engine section's %q", what, known)
			}
			return bad("cannot tell where the %s ends and the number of contexts begins in %q", what, parts[last]+digits)
		}
		splits = fit
	}
	if len(splits) == 0 {
		return bad("cannot read the number of contexts %q", digits)
	}
	parts[last], sum.contexts = splits[0].field, splits[0].n
	sum.engine = parts[0]
	if len(parts) > 1 {
		sum.version = parts[1]
	}
	if len(parts) > 2 {
		sum.quant = strings.Join(parts[2:], " · ")
	}
	for _, c := range []struct{ what, page, sec string }{
		{"engine", sum.engine, eng.Name},
		{"version", sum.version, eng.Version},
		{"quantization", sum.quant, eng.Quantization},
	} {
		if c.page != "" && c.sec != "" && c.page != c.sec {
			return bad("the summary's %s %q differs from the Engine section's %q", c.what, c.page, c.sec)
		}
	}
	return sum, nil
}

// parseRange reads "lo–hi)" or "v)" and returns the text after ")".
func parseRange(s string, conv func(string) (int, bool)) (lo, hi int, rest string, ok bool) {
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return 0, 0, "", false
	}
	inner, rest := s[:end], s[end+1:]
	a, b, found := strings.Cut(inner, "–")
	if !found {
		a, b, found = strings.Cut(inner, "-")
	}
	if !found {
		b = a
	}
	lo, ok1 := conv(strings.TrimSpace(a))
	hi, ok2 := conv(strings.TrimSpace(b))
	return lo, hi, rest, ok1 && ok2
}

func cutAny(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return s, false
}

// knownTools are benchmark tools a byline may name.
func knownTools() []string {
	return []string{
		"llm-inference-bench", "vllm bench serve", "llama-batched-bench", "llama-bench",
		"guidellm", "genai-perf", "aiperf", "llmperf", "inference-benchmarker",
		"sglang.bench_serving", "benchmark_serving.py",
	}
}

// versionPrefix returns the version (v?\d+(\.\d+)*) at the start of s.
func versionPrefix(s string) string {
	k := 0
	if strings.HasPrefix(s, "v") {
		k++
	}
	d := k
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == d {
		return ""
	}
	for k+1 < len(s) && s[k] == '.' && isDigit(s[k+1]) {
		k++
		for k < len(s) && isDigit(s[k]) {
			k++
		}
	}
	return s[:k]
}

// splitTool splits "llm-inference-bench v0.8.0" into the tool and its
// version.
func splitTool(s string) (tool, version string) {
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		if v := s[i+1:]; versionPrefix(v) == v {
			return strings.TrimSpace(s[:i]), v
		}
	}
	return s, ""
}

// parseByline reads "by @Sandbergllm-inference-bench v0.8.0Measured": the
// submitter, the benchmark tool and its version, then a status badge,
// which is ignored. Where the submitter ends is told by the Run section's
// Benchmark tool (toolField) or, without it, by a known tool name followed
// by a version.
func parseByline(l line, toolField string) (submitter, tool, version string, err error) {
	rest := strings.TrimPrefix(l.text, "by @")
	handle := func(s string) string { return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "·")) }
	if toolField != "" {
		if i := strings.Index(rest, toolField); i > 0 && handle(rest[:i]) != "" {
			return handle(rest[:i]), "", "", nil
		}
		return "", "", "", errorf(l.n, "the byline does not name the Run section's benchmark tool %q after the submitter", toolField)
	}
	type cand struct {
		at            int
		tool, version string
	}
	var cands []cand
	for _, t := range knownTools() {
		for off := 0; off < len(rest); {
			i := strings.Index(rest[off:], t)
			if i < 0 {
				break
			}
			i += off
			if after, ok := strings.CutPrefix(rest[i+len(t):], " "); ok && i > 0 {
				if v := versionPrefix(after); v != "" {
					cands = append(cands, cand{i, t, v})
				}
			}
			off = i + 1
		}
	}
	switch {
	case len(cands) == 1 && handle(rest[:cands[0].at]) != "":
		c := cands[0]
		return handle(rest[:c.at]), c.tool, c.version, nil
	case len(cands) > 1:
		return "", "", "", errorf(l.n, "cannot tell the submitter from the benchmark tool in the byline: %d known tools fit", len(cands))
	}
	return "", "", "", errorf(l.n, "cannot tell the submitter from the benchmark tool in the byline: no known tool followed by a version, and the Run section has no Benchmark tool")
}
