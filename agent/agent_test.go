package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/matrixd/matrixd/agent"
	"github.com/matrixd/matrixd/api"
)

// TestInputSchemasAreTheOperations: every tool takes exactly its
// operation's query and path parameters, described, required and bounded
// as openapi.yaml has them.
func TestInputSchemasAreTheOperations(t *testing.T) {
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := agent.New(nil, spec, agent.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) < 9 {
		t.Fatalf("%d tools", len(tools.Tools))
	}
	for _, tool := range tools.Tools {
		op, params := find(spec, tool.Name)
		if op == nil {
			t.Errorf("tool %s: no operation of that id", tool.Name)
			continue
		}
		if !strings.HasPrefix(tool.Description, op.Summary) || !strings.Contains(tool.Description, strings.TrimSpace(op.Description)) {
			t.Errorf("tool %s: description is not the operation's", tool.Name)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var in struct {
			Properties map[string]struct {
				Description string   `json:"description"`
				Minimum     *float64 `json:"minimum"`
				Maximum     *float64 `json:"maximum"`
				Enum        []any    `json:"enum"`
			} `json:"properties"`
			Required             []string `json:"required"`
			AdditionalProperties any      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		if in.AdditionalProperties != false {
			t.Errorf("tool %s: takes arguments that are not parameters", tool.Name)
		}
		var names, required []string
		for _, p := range params {
			if p.Value.In != openapi3.ParameterInQuery && p.Value.In != openapi3.ParameterInPath {
				continue
			}
			names = append(names, p.Value.Name)
			if p.Value.Required {
				required = append(required, p.Value.Name)
			}
			got, ok := in.Properties[p.Value.Name]
			if !ok {
				continue
			}
			if got.Description != p.Value.Description {
				t.Errorf("tool %s, %s: description %q, want the spec's %q", tool.Name, p.Value.Name, got.Description, p.Value.Description)
			}
			s := p.Value.Schema.Value
			if s.Min != nil && !s.ExclusiveMin.IsSet() && (got.Minimum == nil || *got.Minimum != *s.Min) {
				t.Errorf("tool %s, %s: minimum %v, want %v", tool.Name, p.Value.Name, got.Minimum, *s.Min)
			}
			if s.Max != nil && !s.ExclusiveMax.IsSet() && (got.Maximum == nil || *got.Maximum != *s.Max) {
				t.Errorf("tool %s, %s: maximum %v, want %v", tool.Name, p.Value.Name, got.Maximum, *s.Max)
			}
			if len(s.Enum) > 0 && len(got.Enum) != len(s.Enum) {
				t.Errorf("tool %s, %s: enum %v, want %v", tool.Name, p.Value.Name, got.Enum, s.Enum)
			}
		}
		var props []string
		for name := range in.Properties {
			props = append(props, name)
		}
		slices.Sort(names)
		slices.Sort(props)
		slices.Sort(required)
		slices.Sort(in.Required)
		if !slices.Equal(props, names) {
			t.Errorf("tool %s: arguments %v, want the parameters %v", tool.Name, props, names)
		}
		if !slices.Equal(in.Required, required) {
			t.Errorf("tool %s: required %v, want %v", tool.Name, in.Required, required)
		}
	}
}

func find(spec *openapi3.T, id string) (*openapi3.Operation, openapi3.Parameters) {
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			if strings.EqualFold(op.OperationID, id) {
				return op, append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
			}
		}
	}
	return nil, nil
}

// panicky answers listRuns with a panic.
type panicky struct{ api.StrictServerInterface }

func (panicky) ListRuns(context.Context, api.ListRunsRequestObject) (api.ListRunsResponseObject, error) {
	panic("boom")
}

// TestPanicIsA500: an operation that panics answers the tool call with a
// 500 problem that says nothing internal, and the server goes on.
func TestPanicIsA500(t *testing.T) {
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	var reported error
	srv, err := agent.New(panicky{}, spec, agent.Options{Problem: func(_ context.Context, err error) (int, []byte) {
		reported = err
		return 500, []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"the server failed to answer"}`)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "listRuns", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.HasPrefix(text, "500 Internal Server Error") || strings.Contains(text, "boom") {
			t.Errorf("a panic answered %v %q; want a 500 tool error saying nothing internal", res.IsError, text)
		}
	}
	if reported == nil || !strings.Contains(reported.Error(), "boom") || !strings.Contains(reported.Error(), "goroutine") {
		t.Errorf("the error handed on for the log: %v; want the panic with its stack", reported)
	}
}
