package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/matrixd/matrixd/store"
)

// ParseRunJSON parses the run object of the API: snake_case fields named
// exactly as store.Run's JSON tags, without id and created_at, which the
// server assigns. Unknown or repeated fields, values of the wrong type,
// negative numbers, unknown statuses and data after the object are
// *ParseErrors naming the field and its line. Absent and null values stay
// absent.
func ParseRunJSON(b []byte) (store.Run, error) {
	b = bytes.TrimPrefix(b, []byte(bom))
	if !utf8.Valid(b) {
		at := 0
		for at < len(b) {
			r, size := utf8.DecodeRune(b[at:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			at += size
		}
		return store.Run{}, errorf(lineAt(b, at), "text is not valid UTF-8")
	}
	// encoding/json matches field names ignoring case and lets a repeated
	// field overwrite the first, so a first pass over the tokens holds the
	// input to the exact contract and knows where each value is.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	w := &walker{dec: dec, src: b}
	if _, err := w.value(reflect.TypeFor[store.Run](), ""); err != nil {
		return store.Run{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		at := int(dec.InputOffset())
		for at < len(b) && strings.IndexByte(" \t\r\n", b[at]) >= 0 {
			at++
		}
		return store.Run{}, errorf(lineAt(b, at), "unexpected data after the run object")
	}
	var r store.Run
	strict := json.NewDecoder(bytes.NewReader(b))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&r); err != nil {
		return store.Run{}, errorf(0, "%v", err)
	}
	return finish(r)
}

func lineAt(b []byte, off int) int {
	off = max(0, min(off, len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// walker checks a JSON document against a Go type token by token.
type walker struct {
	dec *json.Decoder
	src []byte
}

func (w *walker) fail(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return errorf(lineAt(w.src, int(w.dec.InputOffset())), "%s", msg)
}

func (w *walker) token() (json.Token, error) {
	t, err := w.dec.Token()
	if err == nil {
		return t, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, errorf(lineAt(w.src, int(se.Offset)), "invalid JSON: %v", se)
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, errorf(lineAt(w.src, len(w.src)), "the JSON ends early")
	}
	return nil, errorf(lineAt(w.src, int(w.dec.InputOffset())), "invalid JSON: %v", err)
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

// value reads one value of type t at path and returns its token when it
// is a scalar.
func (w *walker) value(t reflect.Type, path string) (json.Token, error) {
	tok, err := w.token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		if path == "" {
			return nil, w.fail(path, "the run must be a JSON object, not null")
		}
		return nil, nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := func(what string) error {
		if path == "" {
			return w.fail(path, "the run must be a JSON object, not %s", describeToken(tok))
		}
		return w.fail(path, "want %s, not %s", what, describeToken(tok))
	}
	switch t.Kind() {
	case reflect.Struct:
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, want("an object")
		}
		return nil, w.object(t, path)
	case reflect.Slice:
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, want("an array")
		}
		for i := 0; w.dec.More(); i++ {
			if _, err := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		_, err := w.token()
		return nil, err
	case reflect.Map:
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, want("an object")
		}
		seen := map[string]bool{}
		for w.dec.More() {
			k, err := w.token()
			if err != nil {
				return nil, err
			}
			key, _ := k.(string)
			if seen[key] {
				return nil, w.fail(path, "%q appears twice", key)
			}
			seen[key] = true
			if _, err := w.value(t.Elem(), path+"."+key); err != nil {
				return nil, err
			}
		}
		_, err := w.token()
		return nil, err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return nil, want("a string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return nil, want("true or false")
		}
	case reflect.Int:
		n, ok := tok.(json.Number)
		if !ok {
			return nil, want("a number")
		}
		v, err := strconv.Atoi(string(n))
		if err != nil {
			return nil, w.fail(path, "want a whole number, not %s", n)
		}
		if v < 0 {
			return nil, w.fail(path, "must not be negative")
		}
	case reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return nil, want("a number")
		}
		v, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return nil, w.fail(path, "%s is out of range", n)
		}
		if v < 0 {
			return nil, w.fail(path, "must not be negative")
		}
	default:
		return nil, w.fail(path, "cannot be read") // only if store.Run grows a new kind
	}
	return tok, nil
}

// object reads the members of a struct-typed object, after its '{'.
func (w *walker) object(t reflect.Type, path string) error {
	seen := map[string]bool{}
	for w.dec.More() {
		k, err := w.token()
		if err != nil {
			return err
		}
		key, _ := k.(string)
		if seen[key] {
			return w.fail(path, "%q appears twice", key)
		}
		seen[key] = true
		if path == "" && (key == "id" || key == "created_at") {
			return w.fail(path, "%s is assigned by the server and must not be sent", key)
		}
		f, ok := fieldByJSONName(t, key)
		if !ok {
			return w.fail(path, "unknown field %q", key)
		}
		sub := key
		if path != "" {
			sub = path + "." + key
		}
		tok, err := w.value(f.Type, sub)
		if err != nil {
			return err
		}
		if f.Name == "Status" {
			if s, _ := tok.(string); !statusValid(s) {
				return w.fail(sub, "%s is not %s, %s or %s", statusShow(tok), store.StatusValid, store.StatusRequestsQueued, store.StatusOverCapacity)
			}
		}
	}
	_, err := w.token()
	return err
}

func statusValid(s string) bool {
	return s == store.StatusValid || s == store.StatusRequestsQueued || s == store.StatusOverCapacity
}

func statusShow(tok json.Token) string {
	if s, ok := tok.(string); ok {
		return strconv.Quote(s)
	}
	return "null"
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
