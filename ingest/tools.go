package ingest

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// Tool output formats that FromTool reads.
const (
	FormatLlamaBatchedBench = "llama-batched-bench"
	FormatVLLMBench         = "vllm-bench"
	FormatGridCSV           = "grid-csv"
)

// Formats returns the tool formats FromTool reads, in a fixed order.
func Formats() []string {
	return []string{FormatLlamaBatchedBench, FormatVLLMBench, FormatGridCSV}
}

// ToolFile is one output file of a benchmark tool.
type ToolFile struct {
	Name string // shown in errors, e.g. "bench.md"
	Data []byte
}

// ToolOptions choose among what a tool's output holds.
type ToolOptions struct {
	// TG picks one text-generation length from a llama-batched-bench table
	// that measured several; 0 means the table must hold only one.
	TG int
}

// Bounds on what FromTool reads, so that no input costs much.
const (
	maxToolFiles     = 256
	maxToolFileBytes = 4 << 20
	maxToolRows      = 4096
)

// FromTool builds one run from a tool's output files: the cells (and whatever the
// output states about the run) come from the files, everything else from meta
// (a run without cells, as parsed from the caller's META.json). Something the output
// states that contradicts meta is an error naming both values. The run is returned
// in canonical order (r.Normalize()) but NOT validated: the caller validates it.
// Errors are *ParseError with File (the ToolFile.Name) and Line (1-based) set where they apply.
func FromTool(format string, meta store.Run, files []ToolFile, opts ToolOptions) (store.Run, error) {
	var parse func(*store.Run, []ToolFile, ToolOptions) error
	switch format {
	case FormatLlamaBatchedBench:
		parse = parseLlamaBatchedBench
	case FormatVLLMBench:
		if opts.TG != 0 {
			return store.Run{}, &ParseError{Msg: "a text-generation length (--tg, tg=) applies only to llama-batched-bench output"}
		}
		parse = parseVLLMBench
	case FormatGridCSV:
		if opts.TG != 0 {
			return store.Run{}, &ParseError{Msg: "a text-generation length (--tg, tg=) applies only to llama-batched-bench output"}
		}
		parse = parseGridCSV
	default:
		return store.Run{}, &ParseError{Msg: fmt.Sprintf("unknown tool format %q: known formats are %s", format, strings.Join(Formats(), ", "))}
	}
	switch {
	case len(files) == 0:
		return store.Run{}, &ParseError{Msg: "no tool output files given"}
	case len(files) > maxToolFiles:
		return store.Run{}, &ParseError{Msg: fmt.Sprintf("%d files given: at most %d are read for one run", len(files), maxToolFiles)}
	}
	for _, f := range files {
		if len(f.Data) > maxToolFileBytes {
			return store.Run{}, &ParseError{File: f.Name, Msg: fmt.Sprintf("%d bytes: a tool output file may hold at most 4 MiB", len(f.Data))}
		}
	}
	if n := len(meta.Prefill) + len(meta.Decode); n > 0 {
		return store.Run{}, &ParseError{Msg: fmt.Sprintf("meta must hold no cells (it holds %d): the cells come from the tool output", n)}
	}
	r := meta
	r.Launch.Flags = maps.Clone(meta.Launch.Flags) // the caller's map stays untouched
	if err := parse(&r, files, opts); err != nil {
		return store.Run{}, err
	}
	if err := claimMethod(&r, format); err != nil {
		return store.Run{}, err
	}
	r.Normalize()
	return r, nil
}

// toolClass is the method class each tool's output measures; grid-csv
// holds any engine's results, so its class comes from meta.
func toolClass(format string) string {
	switch format {
	case FormatLlamaBatchedBench:
		return store.MethodBatchedBurst
	case FormatVLLMBench:
		return store.MethodServingSweep
	}
	return ""
}

// claimMethod sets the run's method to the one the tool measures (with its
// parameters from the benchmark fields), or checks the one meta states.
// A grid-csv run whose meta neither states a method nor names a tool
// that says one is refused when it is validated, saying what to send.
func claimMethod(r *store.Run, format string) error {
	want := toolClass(format)
	if r.Method != nil {
		if want != "" && r.Method.Class != want {
			return &ParseError{Msg: fmt.Sprintf("meta says method.class %q, but the output of %s is a %s: leave method out or set its class to %q", r.Method.Class, format, want, want)}
		}
		return nil
	}
	if m, ok := store.InferMethod(*r); ok && (want == "" || m.Class == want) {
		r.Method = &m
	}
	return nil
}

// claimTool sets the run's benchmark tool, or checks the one meta names.
func claimTool(r *store.Run, tool string, also ...string) error {
	have := strings.TrimSpace(r.Benchmark.Tool)
	if have == "" {
		r.Benchmark.Tool = tool
		return nil
	}
	for _, t := range append([]string{tool}, also...) {
		if strings.EqualFold(have, t) {
			return nil
		}
	}
	names := tool
	if len(also) > 0 {
		names = tool + " (or " + strings.Join(also, ", ") + ")"
	}
	return &ParseError{Msg: fmt.Sprintf("meta says benchmark.tool %q, but this is the output of %s: leave benchmark.tool empty or set it to %q", have, names, tool)}
}

// toolPlace names a line of a tool file inside a message.
func toolPlace(file string, line int) string {
	if file == "" {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s line %d", file, line)
}

func tooManyRows(file string, line int) error {
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf("more than %d rows in all: one run is read from at most %d; split the output", maxToolRows, maxToolRows)}
}

// toolFlags are launch flags with where each came from, so that a
// contradiction can name both of its sides.
type toolFlags struct {
	values map[string]string
	from   map[string]string // "" for meta
}

func newToolFlags(meta map[string]string) *toolFlags {
	f := &toolFlags{values: map[string]string{}, from: map[string]string{}}
	for k, v := range meta {
		f.values[k], f.from[k] = v, ""
	}
	return f
}

func (f *toolFlags) set(key, value, file string, line int) error {
	old, ok := f.values[key]
	if !ok {
		f.values[key], f.from[key] = value, toolPlace(file, line)
		return nil
	}
	if old == value {
		return nil
	}
	src := f.from[key]
	if src == "" {
		src = "meta's launch.flags"
	}
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf("%s is %s here, but %s says %s", key, value, src, old)}
}

// result is the flags to store: nil when there are none, as meta leaves them.
func (f *toolFlags) result() map[string]string {
	if len(f.values) == 0 {
		return nil
	}
	return f.values
}

// toolWhole reads a whole number of at most limit written in decimal digits.
func toolWhole(s string, limit int64) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > limit {
		return 0, false
	}
	return int(v), true
}

// toolNumber reads a finite number that is not negative.
func toolNumber(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && toolFinite(v)
}

func toolFinite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// lineCounter turns byte offsets that mostly grow into 1-based line numbers
// without counting from the start each time.
type lineCounter struct {
	src  []byte
	off  int
	line int
}

func (c *lineCounter) at(off int) int {
	off = max(0, min(off, len(c.src)))
	if off < c.off || c.line == 0 {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.src[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}

// toolSortedInts returns the distinct values of m's keys in order.
func toolSortedInts(m map[int]bool) []int {
	return slices.Sorted(maps.Keys(m))
}
