package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// vllmTool is what a run measured with `vllm bench serve` names as its
// benchmark tool.
const vllmTool = "vllm bench serve"

// sglangTool is what a run measured with SGLang's bench_serving names as
// its benchmark tool: its printed blocks say so, and meta may.
const sglangTool = "sglang.bench_serving"

// vllmAliases are the other names of the tools whose output this format
// reads that meta's benchmark.tool may give.
var vllmAliases = []string{sglangTool, "python -m sglang.bench_serving", "python3 -m sglang.bench_serving", "benchmark_serving.py", "benchmark_serving"}

// vllmResult is one result object of `vllm bench serve --save-result`:
// its top-level values, raw, with the line each is on. A result block the
// tools print is read into the same keys, its values as the JSON holds them.
type vllmResult struct {
	file    string
	line    int
	fields  map[string]vllmField
	printed bool // read from a printed block: messages name its lines
	closed  bool // a printed block that ended at its closing line of '='
}

type vllmField struct {
	raw          json.RawMessage
	line         int
	label, value string // as printed, for a block
}

// parseVLLMBench reads the result files of `vllm bench serve
// --save-result` (one result a file, or several one after another as
// --append-result and SGLang's --output-file write them), or text holding
// the result blocks either tool prints, one decode cell each, into r.
func parseVLLMBench(r *store.Run, files []ToolFile, _ ToolOptions) error {
	named := strings.TrimSpace(r.Benchmark.Tool) != ""
	if err := claimTool(r, vllmTool, vllmAliases...); err != nil {
		return err
	}
	modelFrom := "meta's model.name"
	seen := map[[2]int]string{} // (context, concurrency) → where it was
	sglang := true              // every result a block SGLang printed
	for _, f := range files {
		found := 0
		err := eachVLLMResult(f, func(res *vllmResult) error {
			found++
			if len(r.Decode) == maxToolRows {
				return tooManyRows(res.file, res.line)
			}
			c, err := res.cell()
			if err != nil {
				return err
			}
			k := [2]int{c.ContextTokens, c.Concurrency}
			if at, ok := seen[k]; ok {
				return res.fail("", "context %d tokens at concurrency %d was measured twice: here and at %s", k[0], k[1], at)
			}
			seen[k] = toolPlace(res.file, res.line)
			sglang = sglang && res.printed && strings.HasPrefix(res.fields["max_concurrency"].label, "Max re")
			if id, line, ok := res.text("model_id"); ok && id != "" {
				switch {
				case r.Model.Name == "":
					r.Model.Name, modelFrom = id, "model_id at "+toolPlace(res.file, line)
				case r.Model.Name != id:
					return &ParseError{File: res.file, Line: line, Msg: fmt.Sprintf("model_id is %q, but %s is %q: the run is of one model", id, modelFrom, r.Model.Name)}
				}
			}
			r.Decode = append(r.Decode, c)
			return nil
		})
		if err != nil {
			return err
		}
		if found == 0 {
			return &ParseError{File: f.Name, Msg: "no result: want the JSON that vllm bench serve --save-result or sglang.bench_serving --output-file writes, or text holding the \"Serving Benchmark Result\" block either prints"}
		}
	}
	if !named && sglang {
		r.Benchmark.Tool = sglangTool // "Max request concurrency" is SGLang's line
	}
	return nil
}

// cell maps one result to its decode cell.
func (res *vllmResult) cell() (store.DecodeCell, error) {
	var c store.DecodeCell
	completed, err := res.whole("completed", true)
	if err != nil {
		return c, err
	}
	if completed == 0 {
		failed, _ := res.whole("failed", false)
		return c, res.fail("completed", "%s is 0: no request finished (%d failed), so there is nothing to read", res.name("completed"), failed)
	}
	conc, err := res.whole("max_concurrency", false)
	if err != nil {
		return c, err
	}
	if conc < 1 {
		rate := "not given"
		if _, ok := res.fields["request_rate"]; ok {
			rate = res.shown("request_rate")
		}
		if res.printed {
			return c, res.fail("max_concurrency", "no request concurrency in this block (\"Maximum request concurrency\" of vLLM, \"Max request concurrency\" of SGLang; request rate %s): it measured a request rate, not a concurrency; run the benchmark with --max-concurrency N", rate)
		}
		return c, res.fail("max_concurrency", "no max_concurrency (request_rate %s): this result measured a request rate, not a concurrency; run vllm bench serve with --max-concurrency N", rate)
	}
	if err := res.heldConcurrency(conc); err != nil {
		return c, err
	}
	in, err := res.whole("total_input_tokens", true)
	if err != nil {
		return c, err
	}
	out, err := res.whole("total_output_tokens", true)
	if err != nil {
		return c, err
	}
	duration, _, err := res.number("duration", true)
	if err != nil {
		return c, err
	}
	throughput, _, err := res.number("output_throughput", true)
	if err != nil {
		return c, err
	}
	c = store.DecodeCell{
		ContextTokens:     int(math.Round(float64(in) / float64(completed))),
		Concurrency:       conc,
		Status:            store.StatusValid,
		TotalTokS:         new(throughput),
		CompletedRequests: new(completed),
		OutputTokens:      new(out),
		DurationS:         new(duration),
	}
	// The percentile metrics are left out with --percentile-metrics or
	// without a tokenizer: then the cell goes without them.
	if res.printed && !res.closed {
		// A block cut off before its latencies is not one printed without
		// them (--percentile-metrics): that one still ends in its line of '='.
		for _, key := range []string{"median_ttft_ms", "median_tpot_ms"} {
			if _, ok := res.fields[key]; !ok {
				return c, res.fail(key, "no %s line, and the block has no closing line of '=': it looks cut off; paste the whole block vllm bench serve or sglang.bench_serving prints", res.name(key))
			}
		}
	}
	ttft, ok, err := res.number("median_ttft_ms", false)
	if err != nil {
		return c, err
	}
	if ok {
		c.TTFTMs = new(ttft)
	}
	tpot, ok, err := res.number("median_tpot_ms", false)
	if err != nil {
		return c, err
	}
	if ok && tpot > 0 { // 0 when no request generated a second token: nothing measured
		per := 1000 / tpot
		if !toolFinite(per) {
			return c, res.fail("median_tpot_ms", "%s %g is too small", res.name("median_tpot_ms"), tpot)
		}
		c.TBTMs, c.PerRequestTokS = new(tpot), new(per)
	}
	// SGLang's concurrency is the mean number of requests in flight over
	// the run (the sum of their latencies over its duration): the seeds'
	// average active requests. Only a number is that: vLLM writes its
	// --metadata KEY=VALUE pairs at the top level too, as text.
	if f, ok := res.fields["concurrency"]; ok && isJSONNumber(f.raw) {
		active, _, err := res.number("concurrency", false)
		if err != nil {
			return c, err
		}
		if active > float64(conc) {
			return c, res.fail("concurrency", "%s %g is above %s %d: a mean of the requests in flight cannot exceed the limit", res.name("concurrency"), active, res.name("max_concurrency"), conc)
		}
		if active > 0 {
			c.AvgActiveRequests = new(active)
		}
	}
	return c, nil
}

// rateUnpaced reports whether a set request rate paced nothing: at it
// every request (num_prompts, else those that finished or failed) arrived
// within 1 % of the run's duration, as with a rate of 9999 set to mean
// "all at once".
func (res *vllmResult) rateUnpaced() bool {
	rate, ok, err := res.number("request_rate", false)
	if err != nil || !ok || !(rate > 0) {
		return false
	}
	duration, ok, err := res.number("duration", false)
	if err != nil || !ok || !(duration > 0) {
		return false
	}
	n, ok := res.requests()
	return ok && n > 0 && float64(n)/rate <= 0.01*duration
}

// requests is how many requests the result sent: num_prompts, else (a
// printed block and SGLang's JSONL give none) the requests that finished
// or failed.
func (res *vllmResult) requests() (int, bool) {
	if n, err := res.whole("num_prompts", false); err != nil || n > 0 {
		return n, err == nil
	}
	completed, err1 := res.whole("completed", false)
	failed, err2 := res.whole("failed", false)
	return completed + failed, err1 == nil && err2 == nil
}

// heldConcurrency refuses results whose max_concurrency was only a cap:
// a set request rate or ramp-up paced the requests, or there were fewer
// prompts than the concurrency.
func (res *vllmResult) heldConcurrency(conc int) error {
	if f, ok := res.fields["request_rate"]; ok && string(f.raw) != `"inf"` && string(f.raw) != "null" && !res.rateUnpaced() {
		return res.fail("request_rate", "%s is %s: requests came at a set rate, so %s %d was a cap, not the concurrency measured; run with --request-rate inf", res.name("request_rate"), res.shown("request_rate"), res.name("max_concurrency"), conc)
	}
	if f, ok := res.fields["ramp_up_strategy"]; ok && string(f.raw) != "null" {
		return res.fail("ramp_up_strategy", "%s is %s: the request rate changed during the run, so %s %d was a cap, not the concurrency measured", res.name("ramp_up_strategy"), res.shown("ramp_up_strategy"), res.name("max_concurrency"), conc)
	}
	if prompts, err := res.whole("num_prompts", false); err == nil && prompts > 0 && prompts < conc {
		return res.fail("num_prompts", "num_prompts %d is below max_concurrency %d: the concurrency was never reached", prompts, conc)
	}
	// SGLang's JSONL, like a printed block, gives no num_prompts: the
	// requests that finished or failed are all it sent.
	if n, ok := res.requests(); ok && n < conc {
		if _, recorded := res.fields["failed"]; !recorded {
			return res.fail("completed", "%d requests completed (the result records neither num_prompts nor failed requests), fewer than %s %d: the concurrency was never reached; run with --num-prompts at least the concurrency, or leave this result out", n, res.name("max_concurrency"), conc)
		}
		return res.fail("completed", "%d requests ran (%s and %s), fewer than %s %d: the concurrency was never reached", n, res.name("completed"), res.name("failed"), res.name("max_concurrency"), conc)
	}
	return nil
}

// isJSONNumber reports whether a raw JSON value is a number, not text or
// another kind.
func isJSONNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// fail is a *ParseError on the line of key, or of the result's start.
func (res *vllmResult) fail(key, format string, args ...any) error {
	line := res.line
	if f, ok := res.fields[key]; ok {
		line = f.line
	}
	return &ParseError{File: res.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// name is how messages call key: the JSON key, or the line of a block.
func (res *vllmResult) name(key string) string {
	if !res.printed {
		return key
	}
	if f, ok := res.fields[key]; ok && f.label != "" {
		return `"` + f.label + `"`
	}
	return `"` + vllmLabels[key] + `"`
}

// shown is the value of key as the input wrote it.
func (res *vllmResult) shown(key string) string {
	f := res.fields[key]
	if res.printed {
		return f.value
	}
	return string(f.raw)
}

// number is the value of key, a finite number not negative; ok is false
// when the key is absent or null, an error if it is required.
func (res *vllmResult) number(key string, required bool) (v float64, ok bool, err error) {
	f, found := res.fields[key]
	if !found || string(f.raw) == "null" || (!required && string(f.raw) == `"NaN"`) { // NaN: Python could not compute it
		if required && res.printed {
			return 0, false, res.fail(key, "no %s line in this block: want the whole block vllm bench serve or sglang.bench_serving prints", res.name(key))
		}
		if required {
			return 0, false, res.fail(key, "%s is missing: want the result vllm bench serve --save-result writes", key)
		}
		return 0, false, nil
	}
	if !isJSONNumber(f.raw) {
		return 0, false, res.fail(key, "%s is %s: want a number", res.name(key), res.shown(key))
	}
	v, ok = toolNumber(string(f.raw))
	if !ok {
		return 0, false, res.fail(key, "%s is %s: want a finite number, not negative", res.name(key), res.shown(key))
	}
	return v, true, nil
}

// whole is the value of key, a whole number; 0 when it is absent or null
// and not required.
func (res *vllmResult) whole(key string, required bool) (int, error) {
	v, ok, err := res.number(key, required)
	if err != nil || !ok {
		return 0, err
	}
	if v != math.Trunc(v) || v > 1<<53 {
		return 0, res.fail(key, "%s is %s: want a whole number", res.name(key), res.shown(key))
	}
	return int(v), nil
}

// text is the string value of key.
func (res *vllmResult) text(key string) (s string, line int, ok bool) {
	f, found := res.fields[key]
	if !found || json.Unmarshal(f.raw, &s) != nil {
		return "", 0, false
	}
	return s, f.line, true
}

// eachVLLMResult calls each for every JSON object in f, or every printed
// result block when f is not JSON, in order.
func eachVLLMResult(f ToolFile, each func(*vllmResult) error) error {
	src := bytes.TrimPrefix(f.Data, []byte(bom))
	if !vllmIsJSON(src) {
		return eachVLLMBlock(f.Name, src, each)
	}
	src = pythonWords(src)
	lines := &lineCounter{src: src}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	fail := func(err error) error { return vllmSyntax(f.Name, src, lines, dec, err) }
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fail(err)
		}
		res := &vllmResult{file: f.Name, line: lines.at(int(dec.InputOffset())), fields: map[string]vllmField{}}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return &ParseError{File: f.Name, Line: res.line, Msg: "want a JSON object: the result vllm bench serve --save-result writes"}
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return fail(err)
			}
			key, _ := k.(string)
			line := lines.at(int(dec.InputOffset()))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fail(err)
			}
			if _, dup := res.fields[key]; dup {
				return &ParseError{File: f.Name, Line: line, Msg: fmt.Sprintf("%q appears twice", key)}
			}
			res.fields[key] = vllmField{raw: raw, line: line}
		}
		if _, err := dec.Token(); err != nil {
			return fail(err)
		}
		if err := each(res); err != nil {
			return err
		}
	}
}

// pythonWords rewrites the words Python's json module writes for values
// that are not numbers, outside strings, as strings JSON can carry:
// Infinity as "inf" (SGLang's bench_serving writes an unlimited
// request_rate so, where vLLM writes "inf"), -Infinity as "-inf" and NaN as
// "NaN". Line breaks are kept, so lines still count.
func pythonWords(src []byte) []byte {
	if !bytes.Contains(src, []byte("Infinity")) && !bytes.Contains(src, []byte("NaN")) {
		return src
	}
	out := make([]byte, 0, len(src)+16)
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		replaced := false
		for _, w := range [][2]string{{"-Infinity", `"-inf"`}, {"Infinity", `"inf"`}, {"NaN", `"NaN"`}} {
			if bytes.HasPrefix(src[i:], []byte(w[0])) {
				out = append(out, w[1]...)
				i += len(w[0]) - 1
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return out
}

// vllmSyntax describes a JSON error at the start of the value or token
// the decoder stopped at. Python writes NaN and Infinity, which JSON has
// no words for, for values it could not compute.
func vllmSyntax(file string, src []byte, lines *lineCounter, dec *json.Decoder, err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{File: file, Line: lines.at(len(src)), Msg: "the JSON ends early"}
	}
	at := int(dec.InputOffset())
	for at < len(src) && strings.IndexByte(" \t\r\n:,", src[at]) >= 0 {
		at++
	}
	for _, word := range []string{"-Infinity", "Infinity", "NaN"} {
		if bytes.HasPrefix(src[at:], []byte(word)) {
			return &ParseError{File: file, Line: lines.at(at), Msg: fmt.Sprintf("the result holds %s, which is not JSON: Python writes it for a value it could not compute", word)}
		}
	}
	return &ParseError{File: file, Line: lines.at(at), Msg: fmt.Sprintf("invalid JSON: %v", err)}
}
