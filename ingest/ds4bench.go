package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// ds4Columns are the columns of ds4-bench's CSV; the first three are
// required, older files lack the gen_first_ms … gen_steady_tps ones.
func ds4Columns() []string {
	return []string{"ctx_tokens", "gen_tokens", "gen_tps", "prefill_tokens", "prefill_tps", "gen_first_ms", "gen_steady_tokens", "gen_steady_tps", "kvcache_bytes"}
}

// ds4Row is one line of a ds4-bench CSV: the context was filled to ctx
// tokens (the last prefill tokens of it at prefillTPS), then gen tokens
// were generated at genTPS.
type ds4Row struct {
	line                  int
	ctx, prefill, gen     int
	prefillTPS, genTPS    float64
	hasPrefill            bool
	steadyTokens, kvBytes int
}

// metaRun is the run a file's reader starts from: meta, with maps of its
// own so that the reader can change them.
func metaRun(meta store.Run) store.Run {
	r := meta
	r.Launch.Flags = maps.Clone(meta.Launch.Flags)
	return r
}

// readDS4Bench reads the CSV antirez/ds4's ds4-bench writes (one file per
// machine): one stream grows its context in steps, and at each step
// generates gen_tokens tokens. Each row is a decode cell at concurrency 1
// of the decode_at_depth class. When the rows fill the context from empty
// in consecutive steps, the prefill table is the time to fill each
// context, the sum of the steps' times; otherwise there is none.
func readDS4Bench(meta store.Run, f ToolFile) ([]store.Run, error) {
	rows, err := ds4Rows(f)
	if err != nil {
		return nil, err
	}
	r := metaRun(meta)
	if err := claimTool(&r, FormatDS4Bench); err != nil {
		return nil, err
	}
	gen := rows[0].gen
	for _, w := range rows {
		if w.gen != gen {
			return nil, &ParseError{File: f.Name, Line: w.line, Msg: fmt.Sprintf("gen_tokens is %d, but line %d generated %d: one run generates the same number of tokens at every depth", w.gen, rows[0].line, gen)}
		}
		r.Decode = append(r.Decode, store.DecodeCell{
			ContextTokens:     w.ctx,
			Concurrency:       1,
			Status:            store.StatusValid,
			TotalTokS:         new(w.genTPS),
			PerRequestTokS:    new(w.genTPS),
			CompletedRequests: new(1),
			OutputTokens:      new(w.gen),
		})
	}
	r.Prefill = ds4Prefill(rows)
	if r.Method == nil {
		r.Method = &store.Method{Class: store.MethodDecodeAtDepth, OutputTokensPerRequest: new(gen), Prefill: store.PrefillExcluded}
	}
	if r.Benchmark.MaxOutputTokens == nil {
		r.Benchmark.MaxOutputTokens = new(gen)
	}
	return []store.Run{r}, nil
}

// ds4Prefill is the time to fill each context from empty, when the rows
// say it: each row's prefill_tokens are the step from the row before.
func ds4Prefill(rows []ds4Row) []store.PrefillCell {
	var cells []store.PrefillCell
	filled, seconds := 0, 0.0
	for _, w := range rows {
		if !w.hasPrefill || w.prefillTPS <= 0 || w.ctx != filled+w.prefill {
			return nil
		}
		filled, seconds = w.ctx, seconds+float64(w.prefill)/w.prefillTPS
		cells = append(cells, store.PrefillCell{
			ContextTokens: w.ctx,
			Status:        store.StatusValid,
			PromptTokS:    new(float64(w.ctx) / seconds),
			TTFTMs:        new(1000 * seconds),
		})
	}
	return cells
}

// ds4Rows reads the CSV's rows in context order; every field is checked.
func ds4Rows(f ToolFile) ([]ds4Row, error) {
	rd := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(f.Data, []byte(bom))))
	rd.FieldsPerRecord = -1
	rd.TrimLeadingSpace = true
	rd.ReuseRecord = true
	var (
		cols map[string]int
		rows []ds4Row
		seen = map[int]int{}
	)
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &ParseError{File: f.Name, Line: pe.Line, Msg: fmt.Sprintf("not CSV: %v", pe.Err)}
			}
			return nil, &ParseError{File: f.Name, Msg: fmt.Sprintf("not CSV: %v", err)}
		}
		line, _ := rd.FieldPos(0)
		if cols == nil {
			if cols, err = ds4Header(rec); err != nil {
				return nil, &ParseError{File: f.Name, Line: line, Msg: err.Error()}
			}
			continue
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(cols) {
			return nil, &ParseError{File: f.Name, Line: line, Msg: fmt.Sprintf("%d fields, but the header names %d columns", len(rec), len(cols))}
		}
		if len(rows) == maxToolRows {
			return nil, tooManyRows(f.Name, line)
		}
		w, err := ds4Fields(rec, cols)
		if err != nil {
			return nil, &ParseError{File: f.Name, Line: line, Msg: err.Error()}
		}
		w.line = line
		if at, ok := seen[w.ctx]; ok {
			return nil, &ParseError{File: f.Name, Line: line, Msg: fmt.Sprintf("ctx_tokens %d was measured twice: here and at line %d", w.ctx, at)}
		}
		seen[w.ctx] = line
		rows = append(rows, w)
	}
	if cols == nil {
		return nil, &ParseError{File: f.Name, Msg: "no header line: a ds4-bench CSV starts with its column names, " + strings.Join(ds4Columns(), ",")}
	}
	if len(rows) == 0 {
		return nil, &ParseError{File: f.Name, Msg: "no rows: the file has a header but no measurement"}
	}
	slices.SortFunc(rows, func(a, b ds4Row) int { return a.ctx - b.ctx })
	return rows, nil
}

func ds4Header(rec []string) (map[string]int, error) {
	known := ds4Columns()
	cols := map[string]int{}
	for i, c := range rec {
		c = strings.TrimSpace(c)
		if !slices.Contains(known, c) {
			return nil, fmt.Errorf("unknown column %q: a ds4-bench CSV has the columns %s", c, strings.Join(known, ", "))
		}
		if _, dup := cols[c]; dup {
			return nil, fmt.Errorf("column %s is named twice", c)
		}
		cols[c] = i
	}
	for _, c := range known[:3] {
		if _, ok := cols[c]; !ok {
			return nil, fmt.Errorf("column %s is missing: a ds4-bench CSV needs %s", c, strings.Join(known[:3], ", "))
		}
	}
	if hasKey(cols, "prefill_tps") != hasKey(cols, "prefill_tokens") {
		return nil, fmt.Errorf("prefill_tokens and prefill_tps come together: the header has one of them")
	}
	return cols, nil
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// ds4Fields reads one row; an optional column may be empty.
func ds4Fields(rec []string, cols map[string]int) (ds4Row, error) {
	var w ds4Row
	field := func(name string) (string, bool) {
		i, ok := cols[name]
		if !ok {
			return "", false
		}
		s := strings.TrimSpace(rec[i])
		return s, s != ""
	}
	whole := func(name string, p *int, least int) error {
		s, ok := field(name)
		if !ok {
			return nil
		}
		v, good := toolWhole(s, math.MaxInt32)
		if !good || v < least {
			return fmt.Errorf("%s is %q: want a whole number of at least %d", name, s, least)
		}
		*p = v
		return nil
	}
	number := func(name string, p *float64) (bool, error) {
		s, ok := field(name)
		if !ok {
			return false, nil
		}
		v, good := toolNumber(s)
		if !good {
			return false, fmt.Errorf("%s is %q: want a finite number, not negative", name, s)
		}
		*p = v
		return true, nil
	}
	for _, name := range ds4Columns()[:3] {
		if _, ok := field(name); !ok {
			return w, fmt.Errorf("%s is empty: every row needs ctx_tokens, gen_tokens and gen_tps", name)
		}
	}
	var firstMs, steadyTPS float64
	for _, c := range []struct {
		name  string
		p     *int
		least int
	}{{"ctx_tokens", &w.ctx, 1}, {"gen_tokens", &w.gen, 1}, {"prefill_tokens", &w.prefill, 0}, {"gen_steady_tokens", &w.steadyTokens, 0}, {"kvcache_bytes", &w.kvBytes, 0}} {
		if err := whole(c.name, c.p, c.least); err != nil {
			return w, err
		}
	}
	if _, err := number("gen_tps", &w.genTPS); err != nil {
		return w, err
	}
	if w.genTPS == 0 {
		return w, fmt.Errorf("gen_tps is 0: the row generated %d tokens, so it must have a speed above 0", w.gen)
	}
	var err error
	if w.hasPrefill, err = number("prefill_tps", &w.prefillTPS); err != nil {
		return w, err
	}
	if _, err := number("gen_first_ms", &firstMs); err != nil {
		return w, err
	}
	if _, err := number("gen_steady_tps", &steadyTPS); err != nil {
		return w, err
	}
	if w.prefill > w.ctx {
		return w, fmt.Errorf("prefill_tokens is %d, more than ctx_tokens %d", w.prefill, w.ctx)
	}
	return w, nil
}
