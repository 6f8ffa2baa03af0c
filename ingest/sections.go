package ingest

import (
	"strings"
	"unicode/utf8"
)

// line is one trimmed line of a page and its 1-based number.
type line struct {
	n    int
	text string
}

// section is a titled part of a page: its heading and its non-blank lines.
type section struct {
	head  line
	lines []line
}

// The sections of a page, in the order pages print them.
const (
	secHardware = "Hardware"
	secEngine   = "Engine"
	secRun      = "Run"
	secLaunch   = "Launch command"
	secPrefill  = "Prefill"
	secDecode   = "Sustained decode"
	secAll      = "All measurements"
	startLine   = "Speed test matrix"
)

func sectionNames() []string {
	return []string{secHardware, secEngine, secRun, secLaunch, secPrefill, secDecode, secAll}
}

// page is a page cut into its parts; nothing is interpreted yet.
type page struct {
	start  line
	title  line
	header []line // the summary line(s) under the title
	byline line   // n == 0: none
	secs   map[string]*section
	last   int // number of the last line
}

// splitLines cuts a page into trimmed lines. Pages copied from a browser
// carry no-break spaces inside values ("30 s"), so they become spaces.
func splitLines(b []byte) ([]line, error) {
	s := strings.TrimPrefix(string(b), bom)
	raw := strings.Split(s, "\n")
	spaces := strings.NewReplacer("\u00a0", " ", "\u202f", " ", "\u2009", " ")
	ls := make([]line, 0, len(raw))
	for i, t := range raw {
		if !utf8.ValidString(t) {
			return nil, errorf(i+1, "text is not valid UTF-8")
		}
		t = spaces.Replace(t)
		ls = append(ls, line{n: i + 1, text: strings.TrimSpace(t)})
	}
	return ls, nil
}

// stripHashes removes a markdown heading's leading "#"s.
func stripHashes(s string) string {
	t := strings.TrimLeft(s, "#")
	if len(t) < len(s) && strings.HasPrefix(t, " ") {
		return strings.TrimSpace(t)
	}
	return s
}

func headingName(s string) string {
	s = stripHashes(s)
	for _, n := range sectionNames() {
		if s == n {
			return n
		}
	}
	return ""
}

// findStart returns the index of the "Speed test matrix" line that opens
// the page. Navigation may name the page too, so the line wanted is the one
// followed by a title and a summary line.
func findStart(ls []line) int {
	first := -1
	for i, l := range ls {
		if stripHashes(l.text) != startLine {
			continue
		}
		if first < 0 {
			first = i
		}
		var next []string
		for _, m := range ls[i+1:] {
			if m.text != "" {
				next = append(next, m.text)
			}
			if len(next) == 2 {
				break
			}
		}
		if len(next) == 2 && strings.Contains(next[1], " concurrency level") {
			return i
		}
	}
	return first
}

// outline cuts the lines after "Speed test matrix" into the title, the
// summary, the byline and the sections. Each heading is recognised once
// only: "Engine" is both a heading and the Engine section's first key.
func outline(ls []line) (*page, error) {
	start := findStart(ls)
	if start < 0 {
		for _, l := range ls {
			if _, ok := vllmHeaderLine(strings.TrimSpace(l.text)); ok {
				return nil, errorf(0, "no %q line: not a matrix-run page; line %d is a %q block, which format=vllm-bench reads", startLine, l.n, vllmHeader)
			}
		}
		return nil, errorf(0, "no %q line: not a matrix-run page", startLine)
	}
	p := &page{start: ls[start], secs: map[string]*section{}, last: ls[len(ls)-1].n}
	var cur *section
	for _, l := range ls[start+1:] {
		if l.text == "" {
			continue
		}
		if name := headingName(l.text); name != "" && p.secs[name] == nil {
			cur = &section{head: l}
			p.secs[name] = cur
			continue
		}
		switch {
		case cur != nil:
			cur.lines = append(cur.lines, l)
		case p.title.n == 0:
			p.title = line{n: l.n, text: stripHashes(l.text)}
		case strings.HasPrefix(l.text, "by @") && p.byline.n == 0:
			p.byline = l
		default:
			p.header = append(p.header, l)
		}
	}
	if p.title.n == 0 {
		return nil, errorf(p.start.n, "no title after %q", startLine)
	}
	if len(p.header) == 0 {
		return nil, errorf(p.title.n, "no summary line (engine · version · quantization, contexts × concurrency levels) after the title")
	}
	// Without its heading a section's fields join the summary line, where
	// they would only be reported as a summary that cannot be read.
	for _, l := range p.header {
		key := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l.text, "- "), "* "))
		if strings.HasPrefix(l.text, "|") {
			key = splitCells(l.text)[0]
		}
		for _, name := range []string{secHardware, secEngine, secRun} {
			if k := knownKey(sectionKeys(name), key); k != "" {
				return nil, errorf(l.n, "the %s heading is missing: %s is a field of the %s section (add a line %q before this one)", name, k, name, name)
			}
		}
	}
	return p, nil
}

// field is one key and value of a key/value section.
type field struct {
	n, vn      int // the key's and the value's lines
	key, value string
}

// fields reads a key/value section: alternating key and value lines
// ("- " bullets allowed) or two-column markdown table rows. known lists the
// section's keys: a value line that is a key means a value is missing and
// every later pair would be shifted.
func fields(sec *section, known []string) ([]field, error) {
	var fs []field
	var key *line
	for _, l := range sec.lines {
		if strings.HasPrefix(l.text, "|") && key == nil {
			cells := splitCells(l.text)
			if isSeparatorRow(cells) || len(cells) < 2 {
				continue
			}
			fs = append(fs, field{n: l.n, vn: l.n, key: cells[0], value: cells[1]})
			continue
		}
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l.text, "- "), "* "))
		if key == nil {
			key = &line{n: l.n, text: t}
			continue
		}
		if knownKey(known, t) != "" {
			return nil, errorf(key.n, "%s has no value", key.text)
		}
		fs = append(fs, field{n: key.n, vn: l.n, key: key.text, value: t})
		key = nil
	}
	if key != nil {
		return nil, errorf(key.n, "%s has no value", key.text)
	}
	return fs, nil
}

// knownKey returns the known key s names, ignoring case, or "".
func knownKey(known []string, s string) string {
	for _, k := range known {
		if strings.EqualFold(k, s) {
			return k
		}
	}
	return ""
}

// splitCells splits a markdown table row into trimmed cells.
func splitCells(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "|")
	s = strings.TrimSuffix(s, "|")
	cells := strings.Split(s, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

// isSeparatorRow reports whether cells are a markdown |---| row.
func isSeparatorRow(cells []string) bool {
	for _, c := range cells {
		t := strings.Trim(c, ":")
		if len(t) < 3 || strings.Trim(t, "-") != "" {
			return false
		}
	}
	return len(cells) > 0
}
