package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// The RunInput schema in openapi.yaml and the Go run JSON parser are two
// statements of one contract. These tests hold them together both ways:
// what export writes validates against the schema, and for every
// constraint the schema states, a document just inside it imports and one
// just outside it is refused at that very pointer.

func runInputSchema(t *testing.T) *openapi3.Schema {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	ref := spec.Components.Schemas["RunInput"]
	if ref == nil || ref.Value == nil {
		t.Fatal("openapi.yaml has no RunInput schema")
	}
	return ref.Value
}

// exported is run JSON as matrixd export writes it, decoded generically.
func exported(t *testing.T, r store.Run) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(runJSON(t, r), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestExportValidatesAgainstRunInput(t *testing.T) {
	schema := runInputSchema(t)
	var runs []store.Run
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	runs = append(runs, storetest.Runs(48, 20)...)
	for _, r := range runs {
		if err := schema.VisitJSON(exported(t, r), openapi3.MultiErrors()); err != nil {
			t.Errorf("%s: export does not validate against RunInput: %v", r.Title, err)
		}
	}
}

// constraint is one thing the schema says of the value at a pointer.
type constraint struct {
	pointer string
	inside  any    // a value the schema accepts at the limit (nil: not tried)
	outside any    // a value the schema refuses
	drop    bool   // the field is required: leave it out
	extra   string // an unknown member name, for additionalProperties: false
}

// constraints walks the schema and lists, for each constraint, values just
// inside and just outside it. Array items are tried at index 0.
func constraints(s *openapi3.Schema, ptr string) []constraint {
	var out []constraint
	if s.Type.Is(openapi3.TypeObject) {
		if s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has {
			out = append(out, constraint{pointer: ptr, extra: "zz_unknown"})
		}
		for _, name := range s.Required {
			out = append(out, constraint{pointer: ptr + "/" + name, drop: true})
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range s.Properties {
				if !yield(k) {
					return
				}
			}
		}) {
			out = append(out, constraints(s.Properties[name].Value, ptr+"/"+name)...)
		}
		if s.MaxProps != nil && s.AdditionalProperties.Schema != nil {
			big := map[string]any{}
			for i := range int(*s.MaxProps) + 1 {
				big[fmt.Sprintf("flag-%d", i)] = "x"
			}
			out = append(out, constraint{pointer: ptr, outside: big})
		}
		return out
	}
	if s.Type.Is(openapi3.TypeArray) {
		if s.Items != nil && s.Items.Value != nil {
			out = append(out, constraints(s.Items.Value, ptr+"/0")...)
		}
		return out
	}
	switch {
	case s.Type.Is(openapi3.TypeString):
		if s.MaxLength != nil {
			n := int(*s.MaxLength)
			inside, outside := "https://"+strings.Repeat("x", n-8), "https://"+strings.Repeat("x", n-7)
			if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(inside) {
				inside, outside = strings.Repeat("x", n), strings.Repeat("x", n+1) // a token, such as a licence
			}
			out = append(out, constraint{pointer: ptr, inside: inside, outside: outside})
		}
		if s.Pattern != "" {
			out = append(out, constraint{pointer: ptr, outside: "not one token, nor a URL"})
		}
		if s.MinLength > 0 {
			out = append(out, constraint{pointer: ptr, outside: ""})
		}
		if len(s.Enum) > 0 {
			out = append(out, constraint{pointer: ptr, outside: "not_one_of_them"})
		}
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		step := 1.0
		if s.Type.Is(openapi3.TypeNumber) {
			step = 1e-6
		}
		if s.Max != nil {
			out = append(out, constraint{pointer: ptr, inside: *s.Max, outside: *s.Max + math.Max(step, *s.Max*1e-6)})
		}
		if s.Min != nil {
			if s.ExclusiveMin.Bool != nil && *s.ExclusiveMin.Bool {
				out = append(out, constraint{pointer: ptr, outside: *s.Min})
			} else {
				out = append(out, constraint{pointer: ptr, inside: *s.Min, outside: *s.Min - 1})
			}
		}
	}
	return out
}

// set puts v at ptr in doc (creating objects on the way); drop removes it.
func set(doc map[string]any, ptr string, v any, drop bool) {
	parts := strings.Split(ptr[1:], "/")
	var node any = doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				if drop {
					delete(n, p)
				} else {
					n[p] = v
				}
				return
			}
			if _, ok := n[p]; !ok {
				n[p] = map[string]any{}
			}
			node = n[p]
		case []any:
			var j int
			fmt.Sscan(p, &j)
			if last {
				n[j] = v
				return
			}
			node = n[j]
		}
	}
}

func clone(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(doc)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func problemsAt(t *testing.T, doc map[string]any) []store.Problem {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ingest.ParseRunJSON(b)
	if err == nil {
		return nil
	}
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("ParseRunJSON: %v, want a *store.ValidationError", err)
	}
	return ve.Problems
}

func TestRunInputSchemaAndParserAgree(t *testing.T) {
	schema := runInputSchema(t)
	r := storetest.Runs(49, 1)[0]
	// Typed launch fields must agree with the flags, a tie the schema cannot
	// state: the base has no flags, so each field can move alone.
	r.Launch.Flags = nil
	r.Launch.Notes = []string{"a comment line of the launch command"}
	m := r.MethodOf()
	r.Method = &m
	base := exported(t, r)
	if probs := problemsAt(t, base); probs != nil {
		t.Fatalf("the base document does not import: %v", probs)
	}
	cs := constraints(schema, "")
	if len(cs) < 60 {
		t.Fatalf("only %d constraints found in RunInput; the walk is broken", len(cs))
	}
	// Measured values are tied to each other; at their limits they break
	// the redundancy checks, which the schema cannot state. Only their
	// outside values are tried.
	tied := func(p string) bool { return strings.HasPrefix(p, "/decode/") || strings.HasPrefix(p, "/prefill/") }
	for _, c := range cs {
		name := fmt.Sprintf("%s inside=%v outside=%.20v drop=%v extra=%s", c.pointer, c.inside, c.outside, c.drop, c.extra)
		t.Run(name, func(t *testing.T) {
			if c.inside != nil && !tied(c.pointer) {
				doc := clone(t, base)
				set(doc, c.pointer, c.inside, false)
				if err := schema.VisitJSON(doc); err != nil {
					t.Fatalf("the schema refuses its own limit: %v", err)
				}
				for _, p := range problemsAt(t, doc) {
					if p.Pointer == c.pointer {
						t.Errorf("the schema accepts %v at %s, the parser refuses it: %s", c.inside, c.pointer, p.Message)
					}
				}
			}
			doc := clone(t, base)
			want := c.pointer
			switch {
			case c.extra != "":
				set(doc, c.pointer+"/"+c.extra, "x", false)
				want = c.pointer + "/" + c.extra
			case c.drop:
				set(doc, c.pointer, nil, true)
			case c.outside != nil:
				set(doc, c.pointer, c.outside, false)
			default:
				return
			}
			if err := schema.VisitJSON(doc); err == nil {
				t.Fatalf("the schema accepts the value meant to be outside it")
			}
			probs := problemsAt(t, doc)
			if !slices.ContainsFunc(probs, func(p store.Problem) bool { return p.Pointer == want }) {
				t.Errorf("the schema refuses it; the parser reports %v, nothing at %s", probs, want)
			}
		})
	}
}
