package ingest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/matrixd/matrixd/store"
)

// ParseRunJSON parses run JSON (openapi.yaml's RunInput): snake_case
// fields named exactly as store.Run's JSON tags, without id, created_at and
// submitted_by, which the server assigns. JSON that does not parse is a
// *ParseError naming the line. Everything else that is wrong (unknown,
// repeated or missing fields, values of the wrong type, and every check of
// store.Run.Validate) is reported at once as a *store.ValidationError whose
// problems carry their JSON Pointer and line. Absent and null values stay
// absent.
func ParseRunJSON(b []byte) (store.Run, error) {
	d, err := decodeRunJSON(b)
	if err != nil {
		return store.Run{}, err
	}
	if err := d.check(d.run); err != nil {
		return store.Run{}, err
	}
	d.run.Normalize()
	return d.run, nil
}

// decodedJSON is run JSON decoded as far as it goes: the run, the line of
// every value, and the problems found on the way.
type decodedJSON struct {
	run   store.Run
	lines map[string]int // JSON Pointer → line
	bad   []store.Problem
}

// checkJSONText holds JSON text to what can be stored as it was sent:
// valid UTF-8, and no \u escape of half a UTF-16 surrogate pair, which
// encoding/json would silently turn into U+FFFD.
func checkJSONText(b []byte) error {
	if !utf8.Valid(b) {
		at := 0
		for at < len(b) {
			r, size := utf8.DecodeRune(b[at:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			at += size
		}
		return errorf(lineAt(b, at), "text is not valid UTF-8")
	}
	if at := loneSurrogate(b); at >= 0 {
		return errorf(lineAt(b, at), "%s is half a UTF-16 surrogate pair: escape a character outside the Basic Multilingual Plane as a pair (\\uD83D\\uDE00), or send it as UTF-8", b[at:at+6])
	}
	return nil
}

// loneSurrogate is the offset of the first \u escape in a JSON string
// of a high surrogate not followed by a low one, or of a low one alone;
// -1 when there is none.
func loneSurrogate(b []byte) int {
	inString := false
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			inString = !inString
		case inString && b[i] == '\\' && i+1 < len(b):
			if b[i+1] != 'u' {
				i++ // the escaped character, which may be a quote
				continue
			}
			r, ok := hex4(b[i+2:])
			switch {
			case !ok:
			case r >= 0xD800 && r <= 0xDBFF:
				if len(b) < i+12 || b[i+6] != '\\' || b[i+7] != 'u' {
					return i
				}
				if lo, ok := hex4(b[i+8:]); !ok || lo < 0xDC00 || lo > 0xDFFF {
					return i
				}
				i += 11
			case r >= 0xDC00 && r <= 0xDFFF:
				return i
			default:
				i += 5
			}
		}
	}
	return -1
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

// Member is one member of a JSON object, with the line it starts on.
type Member struct {
	Name  string
	Value json.RawMessage
	Line  int
}

// ParseObject decodes b as one JSON object, as strictly as run JSON: valid
// UTF-8 with no lone surrogate escapes and nothing after it (else a
// *ParseError naming the line). Members are in document order, a repeated
// one each time it appears, for the caller to report as run JSON does.
func ParseObject(b []byte) ([]Member, error) {
	b = bytes.TrimPrefix(b, []byte(bom))
	if err := checkJSONText(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	w := &walker{dec: dec, src: b}
	tok, err := w.token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errorf(w.line(), "the body must be a JSON object, not %s", describeToken(tok))
	}
	var out []Member
	for dec.More() {
		k, err := w.token()
		if err != nil {
			return nil, err
		}
		name, _ := k.(string)
		line := w.line()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errorf(w.syntaxLine(), "invalid JSON: %v", err)
		}
		out = append(out, Member{Name: name, Value: v, Line: line})
	}
	if _, err := w.token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(w.line(), "unexpected data after the object")
	}
	return out, nil
}

func decodeRunJSON(b []byte) (decodedJSON, error) {
	b = bytes.TrimPrefix(b, []byte(bom))
	if err := checkJSONText(b); err != nil {
		return decodedJSON{}, err
	}
	// encoding/json matches field names ignoring case and lets a repeated
	// field overwrite the first, so a first pass over the tokens holds the
	// input to the exact contract and knows where each value is.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	w := &walker{dec: dec, src: b, lines: map[string]int{}}
	if err := w.root(); err != nil {
		return decodedJSON{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		at := int(dec.InputOffset())
		for at < len(b) && strings.IndexByte(" \t\r\n", b[at]) >= 0 {
			at++
		}
		return decodedJSON{}, errorf(lineAt(b, at), "unexpected data after the run object")
	}
	d := decodedJSON{lines: w.lines, bad: w.problems}
	if len(d.bad) == 0 {
		if err := json.Unmarshal(b, &d.run); err != nil {
			return decodedJSON{}, errorf(0, "invalid JSON: %v", err)
		}
		return d, nil
	}
	// Drop the values reported above, so that the checks below see every
	// other value and nothing a bad value left behind.
	var tree any
	td := json.NewDecoder(bytes.NewReader(b))
	td.UseNumber()
	if err := td.Decode(&tree); err != nil {
		return decodedJSON{}, errorf(0, "invalid JSON: %v", err)
	}
	for _, p := range d.bad {
		tree = dropPointer(tree, p.Pointer)
	}
	clean, err := json.Marshal(tree)
	if err != nil {
		return decodedJSON{}, errorf(0, "invalid JSON: %v", err)
	}
	_ = json.Unmarshal(clean, &d.run) // a repeated key can still mistype; its problem is reported
	return d, nil
}

// dropPointer removes the value at ptr from a decoded JSON tree: an
// object member is deleted, an array element becomes null.
func dropPointer(tree any, ptr string) any {
	if ptr == "" {
		return tree
	}
	parts := strings.Split(ptr[1:], "/")
	node := tree
	for i, raw := range parts {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		last := i == len(parts)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				delete(n, tok)
				return tree
			}
			node = n[tok]
		case []any:
			j, err := strconv.Atoi(tok)
			if err != nil || j < 0 || j >= len(n) {
				return tree
			}
			if last {
				n[j] = nil
				return tree
			}
			node = n[j]
		default:
			return tree
		}
	}
	return tree
}

// check validates r (built from the decoded JSON) and reports the decoding
// problems and the validation problems together, each with its line, in
// document order. A value already reported is not reported again.
func (d decodedJSON) check(r store.Run) error {
	probs := slices.Clone(d.bad)
	var ve *store.ValidationError
	if err := r.Validate(); errors.As(err, &ve) {
		for _, p := range ve.Problems {
			if !slices.ContainsFunc(d.bad, func(b store.Problem) bool { return within(p.Pointer, b.Pointer) }) {
				probs = append(probs, p)
			}
		}
	} else if err != nil {
		return err
	}
	if len(probs) == 0 {
		return nil
	}
	for i := range probs {
		if probs[i].Line == 0 {
			probs[i].Line = d.lineOf(probs[i].Pointer)
		}
	}
	slices.SortStableFunc(probs, func(a, b store.Problem) int { return cmp.Compare(a.Line, b.Line) })
	return &store.ValidationError{Problems: probs}
}

// within reports whether pointer p is q or inside it.
func within(p, q string) bool { return p == q || strings.HasPrefix(p, q+"/") }

// lineOf is the line of the value at pointer p, or of its nearest
// ancestor present in the document.
func (d decodedJSON) lineOf(p string) int {
	for {
		if n, ok := d.lines[p]; ok {
			return n
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return d.lines[""]
		}
		p = p[:i]
	}
}

func lineAt(b []byte, off int) int {
	off = max(0, min(off, len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// walker checks a JSON document against a Go type token by token. Syntax
// errors stop it; anything else is a problem it notes before going on.
type walker struct {
	dec      *json.Decoder
	src      []byte
	lines    map[string]int
	problems []store.Problem
	// The line at offset at, counted on from the last call: the decoder
	// only moves forward, so counting from the start each time would make
	// a walk quadratic in the document (0.56 s for the largest run).
	at, atLine int
}

func (w *walker) line() int {
	off := max(0, min(int(w.dec.InputOffset()), len(w.src)))
	if w.atLine == 0 || off < w.at {
		w.at, w.atLine = 0, 1
	}
	w.atLine += bytes.Count(w.src[w.at:off], []byte("\n"))
	w.at = off
	return w.atLine
}

func (w *walker) problem(ptr, format string, args ...any) {
	w.problems = append(w.problems, store.Problem{Pointer: ptr, Line: w.line(), Message: fmt.Sprintf(format, args...)})
}

func (w *walker) token() (json.Token, error) {
	t, err := w.dec.Token()
	if err == nil {
		return t, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, errorf(w.syntaxLine(), "invalid JSON: %v", se)
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, errorf(lineAt(w.src, len(w.src)), "the JSON ends early")
	}
	return nil, errorf(w.line(), "invalid JSON: %v", err)
}

// syntaxLine is the line of the first syntax error in the input. A
// Decoder's SyntaxError.Offset counts from where its buffer began;
// Unmarshal checks the whole input first and counts from its start.
func (w *walker) syntaxLine() int {
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(w.src, &v); errors.As(err, &se) {
		return lineAt(w.src, int(se.Offset))
	}
	return w.line()
}

func describeToken(t json.Token) string {
	switch v := t.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true or false"
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	}
	return "null"
}

// root reads the run object; anything else is a syntax-level error, as
// there is no run to report problems in.
func (w *walker) root() error {
	w.lines[""] = 1
	tok, err := w.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errorf(w.line(), "the run must be a JSON object, not %s", describeToken(tok))
	}
	return w.object(reflect.TypeFor[store.Run](), "")
}

// value reads one value of type t at pointer ptr and says whether it was
// null.
func (w *walker) value(t reflect.Type, ptr string) (null bool, err error) {
	w.lines[ptr] = w.line()
	tok, err := w.token()
	if err != nil || tok == nil {
		return err == nil, err
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	delim, isDelim := tok.(json.Delim)
	wrong := func(what string) (bool, error) {
		w.problem(ptr, "want %s, not %s", what, describeToken(tok))
		if isDelim {
			return false, w.skip()
		}
		return false, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if delim != '{' {
			return wrong("an object")
		}
		return false, w.object(t, ptr)
	case reflect.Slice:
		if delim != '[' {
			return wrong("an array")
		}
		for i := 0; w.dec.More(); i++ {
			if _, err := w.value(t.Elem(), ptr+"/"+strconv.Itoa(i)); err != nil {
				return false, err
			}
		}
		_, err := w.token()
		return false, err
	case reflect.Map:
		if delim != '{' {
			return wrong("an object")
		}
		seen := map[string]bool{}
		for w.dec.More() {
			k, err := w.token()
			if err != nil {
				return false, err
			}
			key, _ := k.(string)
			sub := ptr + "/" + escapePointer(key)
			if seen[key] {
				w.problem(sub, "appears twice")
			}
			seen[key] = true
			if _, err := w.value(t.Elem(), sub); err != nil {
				return false, err
			}
		}
		_, err := w.token()
		return false, err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return wrong("a string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return wrong("true or false")
		}
	case reflect.Int:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong("a number")
		}
		if _, err := strconv.Atoi(string(n)); err != nil {
			if _, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && !strings.ContainsAny(string(n), ".eE") {
				w.problem(ptr, "%s is out of range", n)
			} else {
				w.problem(ptr, "want a whole number, not %s", n)
			}
		}
	case reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong("a number")
		}
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			w.problem(ptr, "%s is out of range", n)
		}
	default:
		w.problem(ptr, "cannot be read") // only if store.Run grows a new kind
	}
	return false, nil
}

// skip reads the rest of an object or array whose opening token was read.
func (w *walker) skip() error {
	for depth := 1; depth > 0; {
		tok, err := w.token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// assigned are the run's fields the server sets; run JSON must not send
// them.
func assigned(key string) bool {
	return key == "id" || key == "created_at" || key == "submitted_by" || key == "trust"
}

// object reads the members of a struct-typed object, after its '{', and
// notes required fields that are missing.
func (w *walker) object(t reflect.Type, ptr string) error {
	start := w.line()
	seen := map[string]bool{}
	for w.dec.More() {
		k, err := w.token()
		if err != nil {
			return err
		}
		key, _ := k.(string)
		sub := ptr + "/" + escapePointer(key)
		f, known := fieldByJSONName(t, key)
		switch {
		case seen[key]:
			w.problem(sub, "appears twice")
		case ptr == "" && assigned(key):
			w.problem(sub, "is assigned by the server and must not be sent")
			known = false
		case !known:
			w.problem(sub, "is not a field of %s", objectName(ptr))
		}
		seen[key] = true
		if !known {
			if err := w.skipValue(); err != nil {
				return err
			}
			continue
		}
		null, err := w.value(f.Type, sub)
		if err != nil {
			return err
		}
		if null && required(f) {
			w.problem(sub, "is required; null is not a value")
		}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" && !assigned(name) && !seen[name] && required(f) {
			w.problems = append(w.problems, store.Problem{Pointer: ptr + "/" + name, Line: start, Message: "is required"})
		}
	}
	_, err := w.token()
	return err
}

// required reports whether run JSON must give the field: its tag has
// neither omitempty nor omitzero.
func required(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	return !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero")
}

func (w *walker) skipValue() error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		return w.skip()
	}
	return nil
}

// objectName names the object at ptr for messages: "the run", "decode
// cells".
func objectName(ptr string) string {
	parts := strings.Split(ptr, "/")
	switch {
	case ptr == "":
		return "the run"
	case len(parts) == 3 && (parts[1] == "decode" || parts[1] == "prefill"):
		return parts[1] + " cells"
	}
	return parts[len(parts)-1]
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && tag == name && tag != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
