package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// gridCSVColumns are the columns a grid-csv file may have, in the order
// help text lists them; the first three are required.
func gridCSVColumns() []string {
	return []string{"context_tokens", "concurrency", "total_tok_s", "per_request_tok_s", "ttft_ms", "tbt_ms", "output_tokens", "duration_s", "avg_power_w"}
}

// parseGridCSV reads grid-csv files: a table any engine's results can be
// written as (LMDeploy, TensorRT-LLM, SGLang or a team's own harness).
// Lines starting with # are comments; the first other line names the
// columns, in any order; each further line is one decode cell, an empty
// field meaning "not measured".
func parseGridCSV(r *store.Run, files []ToolFile, _ ToolOptions) error {
	seen := map[[2]int]string{}
	for _, f := range files {
		rd := csv.NewReader(bytes.NewReader(f.Data))
		rd.Comment = '#'
		rd.FieldsPerRecord = -1
		rd.TrimLeadingSpace = true
		rd.ReuseRecord = true
		var cols map[string]int
		for {
			rec, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				var pe *csv.ParseError
				if errors.As(err, &pe) {
					return &ParseError{File: f.Name, Line: pe.Line, Msg: fmt.Sprintf("not CSV: %v", pe.Err)}
				}
				return &ParseError{File: f.Name, Msg: fmt.Sprintf("not CSV: %v", err)}
			}
			line, _ := rd.FieldPos(0)
			if cols == nil {
				if cols, err = gridCSVHeader(rec); err != nil {
					return &ParseError{File: f.Name, Line: line, Msg: err.Error()}
				}
				continue
			}
			if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
				continue
			}
			if len(rec) != len(cols) {
				return &ParseError{File: f.Name, Line: line, Msg: fmt.Sprintf("%d fields, but the header names %d columns", len(rec), len(cols))}
			}
			if len(r.Decode) == maxToolRows {
				return tooManyRows(f.Name, line)
			}
			c, err := gridCSVCell(rec, cols)
			if err != nil {
				return &ParseError{File: f.Name, Line: line, Msg: err.Error()}
			}
			k := [2]int{c.ContextTokens, c.Concurrency}
			if at, ok := seen[k]; ok {
				return &ParseError{File: f.Name, Line: line, Msg: fmt.Sprintf("context %d tokens at concurrency %d was measured twice: here and at %s", k[0], k[1], at)}
			}
			seen[k] = toolPlace(f.Name, line)
			r.Decode = append(r.Decode, c)
		}
		if cols == nil {
			return &ParseError{File: f.Name, Msg: "no header line: the first line that is not a # comment names the columns, e.g. " + strings.Join(gridCSVColumns()[:3], ",")}
		}
	}
	if len(r.Decode) == 0 {
		return &ParseError{Msg: "no cells: the files have a header but no rows"}
	}
	return nil
}

func gridCSVHeader(rec []string) (map[string]int, error) {
	known := gridCSVColumns()
	cols := map[string]int{}
	for i, name := range rec {
		name = strings.ToLower(strings.TrimSpace(name))
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown column %q: the columns are %s (the first three are required)", name, strings.Join(known, ", "))
		}
		if _, dup := cols[name]; dup {
			return nil, fmt.Errorf("column %q is named twice", name)
		}
		cols[name] = i
	}
	for _, need := range known[:3] {
		if _, ok := cols[need]; !ok {
			return nil, fmt.Errorf("no %s column: %s are required", need, strings.Join(known[:3], ", "))
		}
	}
	return cols, nil
}

func gridCSVCell(rec []string, cols map[string]int) (store.DecodeCell, error) {
	field := func(name string) (string, bool) {
		i, ok := cols[name]
		if !ok {
			return "", false
		}
		s := strings.TrimSpace(rec[i])
		return s, s != ""
	}
	whole := func(name string) (*int, error) {
		s, ok := field(name)
		if !ok {
			return nil, nil
		}
		v, ok := toolWhole(s, 1<<31-1)
		if !ok {
			return nil, fmt.Errorf("%s %q is not a whole number", name, s)
		}
		return &v, nil
	}
	number := func(name string) (*float64, error) {
		s, ok := field(name)
		if !ok {
			return nil, nil
		}
		v, ok := toolNumber(s)
		if !ok {
			return nil, fmt.Errorf("%s %q is not a number of at least 0", name, s)
		}
		return &v, nil
	}
	c := store.DecodeCell{Status: store.StatusValid}
	var err error
	ctx, err := whole("context_tokens")
	if err != nil {
		return c, err
	}
	conc, err := whole("concurrency")
	if err != nil {
		return c, err
	}
	if ctx == nil || conc == nil {
		return c, errors.New("context_tokens and concurrency are required in every row")
	}
	c.ContextTokens, c.Concurrency = *ctx, *conc
	if c.TotalTokS, err = number("total_tok_s"); err != nil {
		return c, err
	}
	if c.TotalTokS == nil {
		return c, errors.New("total_tok_s is required in every row")
	}
	if c.PerRequestTokS, err = number("per_request_tok_s"); err != nil {
		return c, err
	}
	if c.TTFTMs, err = number("ttft_ms"); err != nil {
		return c, err
	}
	if c.TBTMs, err = number("tbt_ms"); err != nil {
		return c, err
	}
	if c.OutputTokens, err = whole("output_tokens"); err != nil {
		return c, err
	}
	if c.DurationS, err = number("duration_s"); err != nil {
		return c, err
	}
	if c.AvgPowerW, err = number("avg_power_w"); err != nil {
		return c, err
	}
	return c, nil
}
