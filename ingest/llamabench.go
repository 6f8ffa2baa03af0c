package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// llamaColumns are the columns of llama-batched-bench's markdown table, as
// it prints them.
func llamaColumns() []string {
	return []string{"PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s"}
}

// llamaJSONLRow are the keys of one measurement in its --output-format
// jsonl lines; the other keys repeat the header's settings.
func llamaJSONLRow() []string {
	return []string{"pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed"}
}

// llamaRow is one measured (PP, TG, B) of llama-batched-bench.
type llamaRow struct {
	file      string
	line      int
	pp, tg, b int
	tPP, sPP  float64
	tTG, sTG  float64
}

// llamaReader reads the files of one run.
type llamaReader struct {
	flags *toolFlags
	rows  []llamaRow
	seen  map[[3]int]string // (PP, TG, B) → where it was
}

// parseLlamaBatchedBench reads llama-batched-bench's markdown table or its
// JSONL lines, with any log around them, into r.
func parseLlamaBatchedBench(r *store.Run, files []ToolFile, opts ToolOptions) error {
	if opts.TG < 0 {
		return &ParseError{Msg: fmt.Sprintf("TG %d: the text-generation length to keep must be positive", opts.TG)}
	}
	if err := claimTool(r, FormatLlamaBatchedBench); err != nil {
		return err
	}
	lr := &llamaReader{flags: newToolFlags(r.Launch.Flags), seen: map[[3]int]string{}}
	for _, f := range files {
		n := len(lr.rows)
		if err := lr.file(f); err != nil {
			return err
		}
		if len(lr.rows) == n {
			return &ParseError{File: f.Name, Msg: "no llama-batched-bench rows: want its markdown table (| PP | TG | B | N_KV | …) or its --output-format jsonl lines"}
		}
	}
	rows, err := pickTG(lr.rows, opts.TG)
	if err != nil {
		return err
	}
	for _, w := range rows {
		b := float64(w.b)
		ttft := 1000 * w.tPP
		tbt := 1000 * w.tTG / float64(w.tg)
		if !toolFinite(ttft, tbt) {
			return &ParseError{File: w.file, Line: w.line, Msg: "T_PP s or T_TG s is too large"}
		}
		r.Decode = append(r.Decode, store.DecodeCell{
			ContextTokens:     w.pp,
			Concurrency:       w.b,
			Status:            store.StatusValid,
			TotalTokS:         new(w.sTG),
			PerRequestTokS:    new(w.sTG / b),
			TTFTMs:            new(ttft),
			TBTMs:             new(tbt),
			AvgActiveRequests: new(b),
			CompletedRequests: new(w.b),
			OutputTokens:      new(w.b * w.tg),
			DurationS:         new(w.tTG),
		})
		if w.b == 1 {
			r.Prefill = append(r.Prefill, store.PrefillCell{
				ContextTokens: w.pp,
				Status:        store.StatusValid,
				PromptTokS:    new(w.sPP),
				TTFTMs:        new(ttft),
			})
		}
	}
	r.Launch.Flags = lr.flags.result()
	return nil
}

// pickTG keeps the rows of text-generation length want, or, when want is
// 0, every row as long as no (PP, B) has several.
func pickTG(rows []llamaRow, want int) ([]llamaRow, error) {
	tgs := map[int]bool{}
	for _, w := range rows {
		tgs[w.tg] = true
	}
	have := toolSortedInts(tgs)
	switch {
	case want > 0 && !tgs[want]:
		return nil, &ParseError{Msg: fmt.Sprintf("no row has TG %d: the output has TG %s", want, joinInts(have))}
	case want > 0:
		return slices.DeleteFunc(rows, func(w llamaRow) bool { return w.tg != want }), nil
	}
	// Rows of different TG are fine while each (PP, B) has one: each cell
	// reads its own TG. Two TG for one cell would be two measurements of it.
	perCell := map[[2]int]map[int]bool{}
	for _, w := range rows {
		k := [2]int{w.pp, w.b}
		if perCell[k] == nil {
			perCell[k] = map[int]bool{}
		}
		perCell[k][w.tg] = true
		if len(perCell[k]) > 1 {
			return nil, &ParseError{File: w.file, Line: w.line, Msg: fmt.Sprintf(
				"PP %d, B %d was measured with several text-generation lengths (TG %s): pick one with --tg N (tg=N over HTTP)", w.pp, w.b, joinInts(toolSortedInts(perCell[k])))}
		}
	}
	return rows, nil
}

// file reads one file line by line: table rows follow their header row,
// JSONL rows stand alone, and the settings line can be anywhere.
func (lr *llamaReader) file(f ToolFile) error {
	data := bytes.TrimPrefix(f.Data, []byte(bom))
	var cols []int // column index of each of llamaColumns, while in a table
	for n := 1; len(data) > 0; n++ {
		raw, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		t := strings.TrimSpace(string(raw))
		switch {
		case strings.HasPrefix(t, "|"):
			cells := llamaCells(t)
			if isLlamaHeader(cells) {
				var err error
				if cols, err = llamaHeader(cells); err != nil {
					return &ParseError{File: f.Name, Line: n, Msg: err.Error()}
				}
				continue
			}
			if cols == nil || isLlamaSeparator(cells) {
				continue // another table, or the header's separator
			}
			if err := lr.tableRow(f.Name, n, cells, cols); err != nil {
				return err
			}
		case strings.HasPrefix(t, `{"`):
			cols = nil
			if err := lr.jsonRow(f.Name, n, t); err != nil {
				return err
			}
		default:
			cols = nil
			if err := lr.settings(f.Name, n, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func llamaCells(t string) []string {
	t = strings.TrimSuffix(strings.TrimPrefix(t, "|"), "|")
	cells := strings.Split(t, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func isLlamaHeader(cells []string) bool {
	return slices.Contains(cells, "PP") && slices.Contains(cells, "TG") && slices.Contains(cells, "B")
}

func isLlamaSeparator(cells []string) bool {
	for _, c := range cells {
		if c == "" || strings.Trim(c, "-:") != "" {
			return false
		}
	}
	return true
}

// llamaHeader finds each column by its name; any other column means a
// table this parser does not know.
func llamaHeader(cells []string) ([]int, error) {
	want := llamaColumns()
	cols := make([]int, len(want))
	for i := range cols {
		cols[i] = -1
	}
	for at, c := range cells {
		i := slices.Index(want, c)
		if i < 0 || cols[i] >= 0 {
			return nil, fmt.Errorf("unexpected column %q: a llama-batched-bench table has the columns %s", c, strings.Join(want, ", "))
		}
		cols[i] = at
	}
	for i, at := range cols {
		if at < 0 {
			return nil, fmt.Errorf("column %s is missing: a llama-batched-bench table has the columns %s", want[i], strings.Join(want, ", "))
		}
	}
	return cols, nil
}

func (lr *llamaReader) tableRow(file string, n int, cells []string, cols []int) error {
	if len(cells) != len(cols) {
		return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("the row has %d cells, its header %d", len(cells), len(cols))}
	}
	w := llamaRow{file: file, line: n}
	names := llamaColumns()
	for i, p := range [...]*int{&w.pp, &w.tg, &w.b} {
		c := cells[cols[i]]
		v, ok := toolWhole(c, math.MaxInt32)
		if !ok {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%s is %q: want a whole number", names[i], c)}
		}
		*p = v
	}
	for i, p := range [...]*float64{&w.tPP, &w.sPP, &w.tTG, &w.sTG} {
		c := cells[cols[4+i]]
		v, ok := toolNumber(c)
		if !ok {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%s is %q: want a finite number, not negative", names[4+i], c)}
		}
		*p = v
	}
	return lr.add(w, "B", "TG")
}

func (lr *llamaReader) jsonRow(file string, n int, t string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &obj); err != nil {
		return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("invalid JSONL row: %v", err)}
	}
	w := llamaRow{file: file, line: n}
	row := llamaJSONLRow()
	get := func(k string) (string, error) {
		raw, ok := obj[k]
		if !ok {
			return "", &ParseError{File: file, Line: n, Msg: fmt.Sprintf("the JSONL row has no %q: want llama-batched-bench's keys %s", k, strings.Join(row, ", "))}
		}
		return string(raw), nil
	}
	for i, p := range [...]*int{&w.pp, &w.tg, &w.b} {
		k := row[i]
		s, err := get(k)
		if err != nil {
			return err
		}
		v, ok := toolWhole(s, math.MaxInt32)
		if !ok {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%s is %s: want a whole number", k, s)}
		}
		*p = v
	}
	for i, p := range [...]*float64{&w.tPP, &w.sPP, &w.tTG, &w.sTG} {
		k := row[4+i]
		s, err := get(k)
		if err != nil {
			return err
		}
		v, ok := toolNumber(s)
		if !ok {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%s is %s: want a finite number, not negative", k, s)}
		}
		*p = v
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(row, k) {
			continue
		}
		v, ok, err := jsonScalar(obj[k])
		if err != nil {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("%s: %v", k, err)}
		}
		if !ok {
			continue
		}
		if err := lr.flags.set(k, v, file, n); err != nil {
			return err
		}
	}
	return lr.add(w, "pl", "tg")
}

// jsonScalar is a JSON value as text for a flag: a string unquoted, a
// number or true/false as written; ok is false for null.
func jsonScalar(raw json.RawMessage) (v string, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false, nil
	}
	switch raw[0] {
	case 'n':
		return "", false, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	case '{', '[':
		return "", false, fmt.Errorf("want a number or a string, not %s", map[byte]string{'{': "an object", '[': "an array"}[raw[0]])
	}
	return string(raw), true, nil
}

// settings reads the line llama-batched-bench prints above its table,
// "main: n_kv_max = 4096, n_batch = 2048, …" (the prefix is the function
// that prints it, llama_batched_bench in newer versions), into flags.
// Other lines are log and ignored.
func (lr *llamaReader) settings(file string, n int, t string) error {
	head, rest, ok := strings.Cut(t, ": ")
	fields := strings.Fields(head)
	if !ok || len(fields) == 0 || !isLlamaIdent(fields[len(fields)-1]) {
		return nil
	}
	if !strings.HasPrefix(rest, "n_kv_max = ") && !strings.Contains(rest, ", n_kv_max = ") {
		return nil
	}
	for _, p := range strings.Split(rest, ", ") {
		k, v, found := strings.Cut(p, " = ")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !found || !isLlamaIdent(k) || v == "" {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf("cannot read the setting %q: want key = value", p)}
		}
		if err := lr.flags.set(k, v, file, n); err != nil {
			return err
		}
	}
	return nil
}

func isLlamaIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// add keeps a row once its values are known; bName and tgName are what
// the row's format calls B and TG, for messages.
func (lr *llamaReader) add(w llamaRow, bName, tgName string) error {
	if w.b < 1 {
		return &ParseError{File: w.file, Line: w.line, Msg: fmt.Sprintf("%s is 0: a row needs at least one sequence", bName)}
	}
	if w.tg < 1 {
		return &ParseError{File: w.file, Line: w.line, Msg: fmt.Sprintf("%s is 0: the row generated no tokens, so it measured no decode speed", tgName)}
	}
	if len(lr.rows) == maxToolRows {
		return tooManyRows(w.file, w.line)
	}
	k := [3]int{w.pp, w.tg, w.b}
	if at, ok := lr.seen[k]; ok {
		return &ParseError{File: w.file, Line: w.line, Msg: fmt.Sprintf("PP %d, TG %d, B %d was measured twice: here and at %s", w.pp, w.tg, w.b, at)}
	}
	lr.seen[k] = toolPlace(w.file, w.line)
	lr.rows = append(lr.rows, w)
	return nil
}
