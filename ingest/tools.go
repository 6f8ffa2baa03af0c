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
	FormatDS4Bench          = "ds4-bench"
	FormatLlamaBench        = "llama-bench"
	FormatLlmfit            = "llmfit"
	FormatLocalMaxxing      = "localmaxxing"
	FormatInferenceX        = "inferencex"
)

// Formats returns the tool formats FromTool and FromToolRuns read, in a
// fixed order.
func Formats() []string {
	return []string{FormatLlamaBatchedBench, FormatVLLMBench, FormatGridCSV, FormatDS4Bench, FormatLlamaBench, FormatLlmfit, FormatLocalMaxxing, FormatInferenceX}
}

// fileRuns reads one output file of a format whose every file stands
// alone and may hold several runs (several models, machines or results).
// The runs it returns start from meta, which it must not change.
type fileRuns func(meta store.Run, f ToolFile) ([]store.Run, error)

// perFile is the reader of a format whose files stand alone, or nil.
func perFile(format string) fileRuns {
	switch format {
	case FormatDS4Bench:
		return readDS4Bench
	case FormatLlamaBench:
		return readLlamaBench
	case FormatLlmfit:
		return readLlmfit
	case FormatLocalMaxxing:
		return readLocalMaxxing
	}
	return nil
}

// FromToolRuns builds every run a tool's output files hold. For the formats
// whose files stand alone (ds4-bench, llama-bench, llmfit, localmaxxing)
// each file is read on its own and may give several runs; InferenceX's
// results, a file per cell, make a run per configuration among them; for
// the others all files make one run, as FromTool. Each run starts from meta (run JSON
// without cells) and is returned in canonical order but NOT validated.
func FromToolRuns(format string, meta store.Run, files []ToolFile, opts ToolOptions) ([]store.Run, error) {
	read := perFile(format)
	if read == nil && format != FormatInferenceX {
		r, err := FromTool(format, meta, files, opts)
		if err != nil {
			return nil, err
		}
		return []store.Run{r}, nil
	}
	if opts.TG != 0 {
		return nil, &ParseError{Msg: "a text-generation length (--tg, tg=) applies only to llama-batched-bench output"}
	}
	if err := checkToolInput(meta, files); err != nil {
		return nil, err
	}
	if read == nil {
		// InferenceX: the files together, one run per configuration.
		all := files
		read = func(meta store.Run, _ ToolFile) ([]store.Run, error) { return readInferenceX(meta, all) }
		files = files[:1]
	}
	var runs []store.Run
	for _, f := range files {
		got, err := read(meta, f)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, &ParseError{File: f.Name, Msg: "holds no measurement of " + format}
		}
		for i := range got {
			if err := claimMethod(&got[i], format); err != nil {
				return nil, err
			}
			got[i].Normalize()
		}
		runs = append(runs, got...)
	}
	return runs, nil
}

// checkToolInput holds the files to what one import reads, and meta to
// holding no cells.
func checkToolInput(meta store.Run, files []ToolFile) error {
	switch {
	case len(files) == 0:
		return &ParseError{Msg: "no tool output files given"}
	case len(files) > maxToolFiles:
		return &ParseError{Msg: fmt.Sprintf("%d files given: at most %d are read for one run", len(files), maxToolFiles)}
	}
	for _, f := range files {
		if len(f.Data) > maxToolFileBytes {
			return &ParseError{File: f.Name, Msg: fmt.Sprintf("%d bytes: a tool output file may hold at most 4 MiB", len(f.Data))}
		}
	}
	if n := len(meta.Prefill) + len(meta.Decode); n > 0 {
		return &ParseError{Msg: fmt.Sprintf("meta must hold no cells (it holds %d): the cells come from the tool output", n)}
	}
	return nil
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
	if perFile(format) != nil || format == FormatInferenceX {
		runs, err := FromToolRuns(format, meta, files, opts)
		if err != nil {
			return store.Run{}, err
		}
		if len(runs) != 1 {
			return store.Run{}, &ParseError{Msg: fmt.Sprintf("the %s output holds %d runs, not one: import it with matrixd import, which stores each", format, len(runs))}
		}
		return runs[0], nil
	}
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
	if err := checkToolInput(meta, files); err != nil {
		return store.Run{}, err
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
	case FormatVLLMBench, FormatInferenceX:
		return store.MethodServingSweep
	case FormatDS4Bench, FormatLlamaBench:
		return store.MethodDecodeAtDepth
	case FormatLlmfit, FormatLocalMaxxing:
		return store.MethodOneShot
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
