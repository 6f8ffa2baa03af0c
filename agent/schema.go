package agent

import (
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema is a tool's input: an object of its operation's path and
// query parameters, each with the spec's description, type, limits and
// default, and nothing else (a misspelt argument is refused, as the API
// refuses a misspelt query parameter). Headers (If-None-Match) are left
// out: a tool answers afresh.
func inputSchema(params openapi3.Parameters) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, ref := range params {
		p := ref.Value
		if p == nil || (p.In != openapi3.ParameterInQuery && p.In != openapi3.ParameterInPath) {
			continue
		}
		if p.Schema == nil || p.Schema.Value == nil {
			return nil, fmt.Errorf("parameter %s has no schema", p.Name)
		}
		ps, err := jsonSchema(p.Schema.Value)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		ps.Description = p.Description
		s.Properties[p.Name] = ps
		if p.Required {
			s.Required = append(s.Required, p.Name)
		}
	}
	return s, nil
}

// jsonSchema is an OpenAPI 3.0 schema of a parameter as JSON Schema: its
// allOf merged in (the spec wraps a $ref in allOf to give it a default),
// nullable as a null type, an exclusive bound as its number.
func jsonSchema(o *openapi3.Schema) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Description: o.Description, Pattern: o.Pattern, Minimum: o.Min, Maximum: o.Max}
	for _, sub := range o.AllOf {
		if sub.Value == nil {
			continue
		}
		m, err := jsonSchema(sub.Value)
		if err != nil {
			return nil, err
		}
		merge(s, m)
	}
	if o.Type != nil {
		types := append([]string(nil), (*o.Type)...)
		if o.Nullable {
			types = append(types, "null")
		}
		if len(types) == 1 {
			s.Type = types[0]
		} else {
			s.Types = types
		}
	}
	if len(o.Enum) > 0 {
		s.Enum = o.Enum
	}
	if o.Default != nil {
		b, err := json.Marshal(o.Default)
		if err != nil {
			return nil, err
		}
		s.Default = b
	}
	if o.ExclusiveMin.Bool != nil && *o.ExclusiveMin.Bool {
		s.ExclusiveMinimum, s.Minimum = o.Min, nil
	}
	if o.ExclusiveMax.Bool != nil && *o.ExclusiveMax.Bool {
		s.ExclusiveMaximum, s.Maximum = o.Max, nil
	}
	if o.MinLength > 0 {
		s.MinLength = new(int(o.MinLength))
	}
	if o.MaxLength != nil {
		s.MaxLength = new(int(*o.MaxLength))
	}
	if o.MinItems > 0 {
		s.MinItems = new(int(o.MinItems))
	}
	if o.MaxItems != nil {
		s.MaxItems = new(int(*o.MaxItems))
	}
	if o.Items != nil && o.Items.Value != nil {
		items, err := jsonSchema(o.Items.Value)
		if err != nil {
			return nil, err
		}
		s.Items = items
	}
	if len(o.OneOf) > 0 || len(o.AnyOf) > 0 || o.Not != nil {
		return nil, fmt.Errorf("oneOf, anyOf and not are not converted")
	}
	return s, nil
}

// merge adds what m says and s does not.
func merge(s, m *jsonschema.Schema) {
	if s.Type == "" && s.Types == nil {
		s.Type, s.Types = m.Type, m.Types
	}
	if s.Description == "" {
		s.Description = m.Description
	}
	if s.Enum == nil {
		s.Enum = m.Enum
	}
	if s.Default == nil {
		s.Default = m.Default
	}
	if s.Pattern == "" {
		s.Pattern = m.Pattern
	}
	if s.Minimum == nil {
		s.Minimum = m.Minimum
	}
	if s.Maximum == nil {
		s.Maximum = m.Maximum
	}
	if s.MinLength == nil {
		s.MinLength = m.MinLength
	}
	if s.MaxLength == nil {
		s.MaxLength = m.MaxLength
	}
	if s.Items == nil {
		s.Items = m.Items
	}
}
