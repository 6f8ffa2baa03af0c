package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ReadsEachFile reports whether the format's files stand alone: each is
// read on its own and may hold several runs (FromToolRuns).
func ReadsEachFile(format string) bool { return perFile(format) != nil }

// Detect names the tool format of a file whose format is unambiguous:
// a ds4-bench CSV, llama-bench output, an llmfit submission or LocalMaxxing
// rows. It returns "" for anything else (published pages and run JSON
// among them, and the tool outputs that a run is made of several files
// of), and an error when the file holds the output of two tools, such as
// a page with a llama-batched-bench table and a llama-bench table.
func Detect(data []byte) (string, error) {
	t := bytes.TrimSpace(bytes.TrimPrefix(data, []byte(bom)))
	if len(t) == 0 {
		return "", nil
	}
	switch t[0] {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(t, &obj); err != nil {
			return detectJSONL(t), nil
		}
		switch {
		case has(obj, "schemaVersion", "hardware", "results"):
			return FormatLlmfit, nil
		case has(obj, "presets") || has(obj, "rows") && firstHas(obj["rows"], "tokSOut"):
			return FormatLocalMaxxing, nil
		case has(obj, "n_prompt", "n_gen", "avg_ts"):
			return FormatLlamaBench, nil
		}
		return "", nil
	case '[':
		switch {
		case firstHas(t, "tokSOut"):
			return FormatLocalMaxxing, nil
		case firstHas(t, "n_prompt", "n_gen", "avg_ts"):
			return FormatLlamaBench, nil
		}
		return "", nil
	}
	first, _, _ := bytes.Cut(t, []byte("\n"))
	if h := string(bytes.TrimSpace(first)); strings.HasPrefix(h, "ctx_tokens,") && strings.Contains(h, "gen_tps") {
		return FormatDS4Bench, nil
	}
	bench, batched := false, false
	for line := range bytes.Lines(t) {
		s := strings.TrimSpace(string(line))
		if !strings.HasPrefix(s, "|") {
			continue
		}
		cells := llamaCells(s)
		bench = bench || containsAll(cells, "model", "test", "t/s")
		batched = batched || isLlamaHeader(cells)
	}
	switch {
	case bench && batched:
		return "", fmt.Errorf("holds a llama-bench table and a llama-batched-bench table: name the one to import with --format %s or --format %s", FormatLlamaBench, FormatLlamaBatchedBench)
	case bench:
		return FormatLlamaBench, nil
	}
	return "", nil
}

// detectJSONL is llama-bench when the first line is one of its -o jsonl
// objects.
func detectJSONL(t []byte) string {
	first, _, _ := bytes.Cut(t, []byte("\n"))
	var obj map[string]json.RawMessage
	if json.Unmarshal(first, &obj) == nil && has(obj, "n_prompt", "n_gen", "avg_ts") {
		return FormatLlamaBench
	}
	return ""
}

func has(obj map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

// firstHas reports whether raw is an array whose first element is an
// object with every key.
func firstHas(raw json.RawMessage, keys ...string) bool {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return false
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal(list[0], &obj) == nil && has(obj, keys...)
}

func containsAll(cells []string, names ...string) bool {
	for _, n := range names {
		if !slices.Contains(cells, n) {
			return false
		}
	}
	return true
}
