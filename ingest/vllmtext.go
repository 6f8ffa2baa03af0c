package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// vllmPrinted maps the labels of the result block that `vllm bench serve`
// and SGLang's bench_serving print to the keys of the JSON they write, so
// that a pasted block is read through the same checks as the file. Labels
// not here are not read.
var vllmPrinted = map[string]string{
	"Successful requests:":             "completed",
	"Failed requests:":                 "failed",
	"Maximum request concurrency:":     "max_concurrency", // vLLM
	"Max request concurrency:":         "max_concurrency", // SGLang
	"Max reqeuest concurrency:":        "max_concurrency", // SGLang before the typo was fixed
	"Traffic request rate:":            "request_rate",    // SGLang; vLLM before the block
	"Request rate configured (RPS):":   "request_rate",    // vLLM, printed only when finite
	"Traffic ramp-up strategy:":        "ramp_up_strategy",
	"Benchmark duration (s):":          "duration",
	"Total input tokens:":              "total_input_tokens",
	"Total generated tokens:":          "total_output_tokens",
	"Output token throughput (tok/s):": "output_throughput",
	"Median TTFT (ms):":                "median_ttft_ms",
	"Median TPOT (ms):":                "median_tpot_ms",
	"Concurrency:":                     "concurrency", // SGLang: the measured mean in flight, not the limit
}

// vllmBefore are the lines vLLM prints before its block, while the
// benchmark runs; older versions print the concurrency only there.
var vllmBefore = map[string]bool{"request_rate": true, "ramp_up_strategy": true, "max_concurrency": true}

// vllmLabels names each key, in messages about a block, by the label vLLM
// prints for it.
var vllmLabels = map[string]string{
	"completed":           "Successful requests",
	"failed":              "Failed requests",
	"max_concurrency":     "Maximum request concurrency",
	"request_rate":        "Traffic request rate",
	"ramp_up_strategy":    "Traffic ramp-up strategy",
	"duration":            "Benchmark duration (s)",
	"total_input_tokens":  "Total input tokens",
	"total_output_tokens": "Total generated tokens",
	"output_throughput":   "Output token throughput (tok/s)",
	"median_ttft_ms":      "Median TTFT (ms)",
	"median_tpot_ms":      "Median TPOT (ms)",
	"concurrency":         "Concurrency",
}

const vllmHeader = "Serving Benchmark Result"

// eachVLLMBlock calls each for every "Serving Benchmark Result" block in
// src, in order. A block runs from its header to the line of '=' that
// closes it (or a code fence, the next header, the end). Whatever precedes
// the header's '=' (a comment "#", a quote ">") is taken off its lines too.
// The lines vLLM prints before its block since the last one belong to it.
func eachVLLMBlock(file string, src []byte, each func(*vllmResult) error) error {
	lines := strings.Split(string(src), "\n")
	before := 0 // the first line after the last block
	var res *vllmResult
	prefix := ""
	finish := func() error {
		if res == nil {
			return nil
		}
		r := res
		res = nil
		return each(r)
	}
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(lines[i])
		if p, ok := vllmHeaderLine(line); ok {
			if res != nil {
				before = i // the last block was not closed: nothing came between
			}
			if err := finish(); err != nil {
				return err
			}
			res = &vllmResult{file: file, line: n, fields: map[string]vllmField{}, printed: true}
			prefix = p
			for j := before; j < i; j++ {
				key, f, ok := vllmPrintedLine(lines[j], prefix, j+1)
				if ok && vllmBefore[key] {
					res.fields[key] = f // the last one printed before the block is its own
				}
			}
			before = i + 1
			continue
		}
		if res == nil {
			continue
		}
		body := strings.TrimSpace(strings.TrimPrefix(line, prefix))
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") || (len(body) >= 10 && strings.Trim(body, "=") == "") {
			before = i + 1
			res.closed = !strings.HasPrefix(line, "```") && !strings.HasPrefix(line, "~~~")
			if err := finish(); err != nil {
				return err
			}
			continue
		}
		key, f, ok := vllmPrintedLine(lines[i], prefix, n)
		if !ok {
			continue
		}
		if old, dup := res.fields[key]; dup {
			if old.line >= res.line {
				return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%q appears twice in the block that starts at line %d (first at line %d)", f.label, res.line, old.line)}
			}
			if old.value != f.value {
				return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%q is %s here, but line %d before the block says %s", f.label, f.value, old.line, old.value)}
			}
		}
		res.fields[key] = f
	}
	return finish()
}

// vllmHeaderLine says whether line is a block's header, and what precedes
// its '='.
func vllmHeaderLine(line string) (prefix string, ok bool) {
	at := strings.Index(line, vllmHeader)
	if at < 0 {
		return "", false
	}
	eq := strings.IndexByte(line, '=')
	if eq < 0 || eq > at || strings.Trim(line[eq:at], "= ") != "" || strings.Trim(line[at+len(vllmHeader):], "= ") != "" {
		return "", false
	}
	return strings.TrimSpace(line[:eq]), true
}

// vllmPrintedLine reads a "Label:   value" line the tools print, as the
// key and value their JSON would hold.
func vllmPrintedLine(raw, prefix string, n int) (string, vllmField, bool) {
	line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(raw), prefix))
	colon := strings.IndexByte(line, ':')
	if colon < 0 {
		return "", vllmField{}, false
	}
	key, ok := vllmPrinted[line[:colon+1]]
	if !ok {
		return "", vllmField{}, false
	}
	value := strings.TrimSpace(line[colon+1:])
	return key, vllmField{raw: vllmPrintedValue(value), line: n, label: line[:colon], value: value}, true
}

// vllmPrintedValue is value as the JSON would carry it: Python prints an
// unlimited rate as inf (the JSON's "inf") and a value it could not compute
// as nan; SGLang prints an unset concurrency as "not set", vLLM before its
// block as None.
func vllmPrintedValue(value string) json.RawMessage {
	switch value {
	case "inf":
		return json.RawMessage(`"inf"`)
	case "nan":
		return json.RawMessage(`"NaN"`)
	case "None", "not set":
		return json.RawMessage("null")
	}
	if value != "" && (value[0] == '-' || value[0] >= '0' && value[0] <= '9') && json.Valid([]byte(value)) {
		return json.RawMessage(value)
	}
	s, _ := json.Marshal(value)
	return s
}

// vllmIsJSON says whether a vllm-bench file holds JSON (its first byte
// that is not a space is '{'), not printed blocks.
func vllmIsJSON(src []byte) bool {
	t := bytes.TrimLeft(src, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
