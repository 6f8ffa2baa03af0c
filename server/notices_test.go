package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/msg"
)

// english is what a code's English template says with params: a client
// rendering code and params in English says exactly the server's text.
func english(t *testing.T, code string, params map[string]string) string {
	t.Helper()
	tpl, ok := msg.Template(code)
	if !ok {
		t.Fatalf("code %q is not declared", code)
	}
	m := msg.Message{Code: code}
	for _, name := range msg.Placeholders(tpl) {
		v, ok := params[name]
		if !ok {
			t.Errorf("%s: no parameter %q in %v", code, name, params)
		}
		m.Params = append(m.Params, msg.Param{Name: name, Value: v})
	}
	if len(params) != len(m.Params) {
		t.Errorf("%s: parameters %v, the template names %v", code, params, msg.Placeholders(tpl))
	}
	return msg.Render(msg.Catalog{"en": {msg.Key(code): tpl}}, "en", m)
}

// TestProblemsCarryCodes: every kind of problem (a calculator refusal, a
// request the validator refuses, an unrouted path, a missing run, a
// method not allowed) has a code and parameters whose English is detail.
func TestProblemsCarryCodes(t *testing.T) {
	e := newEnv(t, 0)
	tests := []struct {
		target, method string
		status         int
		code           string
		params         map[string]string
	}{
		{"/v1/calculator/decode?model=fara&gpu=RTX%203060&context_tokens=1024&concurrency=8&vram_gb=1", "GET", 422,
			"calculator.vram_no_room", map[string]string{"vram_gb": "1.0"}},
		{"/v1/runs?limit=500", "GET", 400, "problem.invalid_request", nil},
		{"/v2/nothing", "GET", 404, "problem.no_resource", map[string]string{"path": "/v2/nothing"}},
		{"/v1/runs/rnope", "GET", 404, "problem.run_not_found", map[string]string{"run_id": "rnope"}},
		{"/v1/runs", "DELETE", 405, "problem.method_not_allowed_on", map[string]string{"method": "DELETE", "path": "/v1/runs"}},
	}
	for _, tt := range tests {
		rec := e.do(t, tt.method, tt.target, nil)
		if rec.Code != tt.status {
			t.Fatalf("%s %s: %d %s", tt.method, tt.target, rec.Code, rec.Body)
		}
		var p api.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.Code != tt.code {
			t.Errorf("%s: code %q, want %q (%s)", tt.target, p.Code, tt.code, rec.Body)
			continue
		}
		for k, v := range tt.params {
			if p.Params[k] != v {
				t.Errorf("%s: params[%s] = %q, want %q", tt.target, k, p.Params[k], v)
			}
		}
		if p.Supported != nil && (p.SupportedNotice == nil || english(t, p.SupportedNotice.Code, p.SupportedNotice.Params) != *p.Supported) {
			t.Errorf("%s: supported %q, notice %+v", tt.target, *p.Supported, p.SupportedNotice)
		}
		if p.Detail == nil || english(t, p.Code, p.Params) != *p.Detail {
			t.Errorf("%s: %s with %v says %q in English, detail %v", tt.target, p.Code, p.Params, english(t, p.Code, p.Params), p.Detail)
		}
	}
	// The validator's reasons are its own English: the code says which
	// parameter, the reason rides in the parameters.
	rec := e.do(t, "GET", "/v1/runs?limit=500", nil)
	if !strings.Contains(rec.Body.String(), `"params":{"errors":"limit: number must be at most`) {
		t.Errorf("validation problem: %s", rec.Body)
	}
	// Each field error says its own message with a code too, where it has
	// one: a bound, a value not allowed, a query's encoding.
	for _, c := range []struct{ target, code string }{
		{"/v1/runs?limit=500", "problem.param_at_most"},
		{"/v1/runs?limit=0", "problem.param_at_least"},
		{"/v1/runs?sort=fastest", "problem.param_not_allowed"},
		{"/v1/runs?gpu=%zz", "problem.param_value_escape"},
		{"/v1/runs?gpu=a&gpu=b", "problem.param_repeated"},
		{"/v1/planner?context_tokens=0&min_per_request_tok_s=1&include_scaled_model=true", "predict.scaled_model_needs_model"},
		{"/v1/runs?limit=many", "problem.param_not_integer"},
		{"/v1/runs?colour=blue", "problem.param_unknown_takes"},
		{"/v1/compare?run_ids=r1", "problem.param_min_items"},
		{"/v1/hardware?vendor=nobody", "problem.catalog_has_no"},
		{"/v1/runs?cursor=bogus", "problem.cursor_not_issued"},
		{"/v1/runs?vram_gb_min=10&vram_gb_max=5", "problem.vram_min_over_max"},
	} {
		var p api.Problem
		rec := e.do(t, "GET", c.target, nil)
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Errors == nil || len(*p.Errors) == 0 {
			t.Fatalf("%s: %d %s", c.target, rec.Code, rec.Body)
		}
		f := (*p.Errors)[0]
		if f.Notice == nil || f.Notice.Code != c.code || english(t, f.Notice.Code, f.Notice.Params) != f.Message {
			t.Errorf("%s: field error %q has notice %+v, want %s saying it", c.target, f.Message, f.Notice, c.code)
		}
	}
}

// TestWarningsCarryNotices: a planner answer's warnings each have a
// notice, in the same order, whose English is the warning.
func TestWarningsCarryNotices(t *testing.T) {
	e := newEnv(t, 0)
	p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"30"}, "gpu": {"RTX 3099"}})
	if len(p.Warnings) != 1 || len(p.Notices) != 1 {
		t.Fatalf("warnings %q, notices %v", p.Warnings, p.Notices)
	}
	n := p.Notices[0]
	if n.Code != "predict.no_run_on_unknown_gpu_suggest" || n.Params["gpu"] != `"RTX 3099"` || !strings.Contains(n.Params["suggestions"], "RTX 3090") {
		t.Errorf("notice %+v", n)
	}
	if got := english(t, n.Code, n.Params); got != p.Warnings[0] {
		t.Errorf("notice says %q, warning %q", got, p.Warnings[0])
	}
	// Each option's warnings have their notices too.
	p = plan(t, e, url.Values{"context_tokens": {"200000"}, "min_per_request_tok_s": {"10"}, "max_ttft_ms": {"60000"}})
	said := 0
	for _, o := range p.Options {
		if len(o.Notices) != len(o.Warnings) {
			t.Fatalf("%s: %d warnings, %d notices", o.RunID, len(o.Warnings), len(o.Notices))
		}
		for i, w := range o.Warnings {
			if got := english(t, o.Notices[i].Code, o.Notices[i].Params); got != w {
				t.Errorf("%s: notice %d says %q, warning %q", o.RunID, i, got, w)
			}
			said++
		}
	}
	if said == 0 {
		t.Error("no option warned: the test reads nothing")
	}
	// What limits each option, why it falls short and what a scaled one
	// is have their codes too.
	limits, shortfalls, titles := 0, 0, 0
	for _, q := range []url.Values{
		{"context_tokens": {"0"}, "min_per_request_tok_s": {"30"}},
		{"context_tokens": {"200000"}, "min_per_request_tok_s": {"10"}, "max_ttft_ms": {"60000"}},
		{"context_tokens": {"0"}, "min_per_request_tok_s": {"1000"}},
		{"context_tokens": {"0"}, "min_per_request_tok_s": {"50"}, "model": {"fara"}, "include_scaled": {"true"}, "limit": {"3"}},
		{"context_tokens": {"0"}, "min_per_request_tok_s": {"10"}, "model": {"nemotron"}, "gpu": {"RTX 4060 Ti 16GB"}, "include_scaled_model": {"true"}},
	} {
		for _, o := range plan(t, e, q).Options {
			if o.BindingDetail != nil {
				limits++
				if o.BindingNotice == nil || english(t, o.BindingNotice.Code, o.BindingNotice.Params) != *o.BindingDetail {
					t.Errorf("%s: binding %q, notice %+v", o.RunID, *o.BindingDetail, o.BindingNotice)
				}
			}
			if sh := o.Shortfall; sh != nil {
				shortfalls++
				if english(t, sh.ReasonNotice.Code, sh.ReasonNotice.Params) != sh.Reason {
					t.Errorf("%s: shortfall %q, notice %+v", o.RunID, sh.Reason, sh.ReasonNotice)
				}
			}
			if o.TitleNotice != nil {
				titles++
				if english(t, o.TitleNotice.Code, o.TitleNotice.Params) != o.Title {
					t.Errorf("%s: title %q, notice %+v", o.RunID, o.Title, o.TitleNotice)
				}
			}
		}
	}
	if limits == 0 || shortfalls == 0 || titles == 0 {
		t.Errorf("%d limits, %d shortfalls, %d scaled titles read: want some of each", limits, shortfalls, titles)
	}
	// A calculator answer's too.
	rec := e.do(t, http.MethodGet, "/v1/calculator/capacity?model=fara&gpu=RTX%203060&context_tokens=4096&vram_gb=8", nil)
	var c api.CapacityEstimate
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if len(c.Warnings) == 0 || len(c.Notices) != len(c.Warnings) {
		t.Fatalf("warnings %q, notices %v", c.Warnings, c.Notices)
	}
	for i, w := range c.Warnings {
		if got := english(t, c.Notices[i].Code, c.Notices[i].Params); got != w {
			t.Errorf("notice %d says %q, warning %q", i, got, w)
		}
	}
	// A grid's refused cells say why with a code too.
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	rec = e.do(t, http.MethodGet, "/v1/calculator/grid?run_id="+fara+"&contexts=49152,204800&concurrencies=1,6", nil)
	var g api.GridPrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	refused := 0
	for _, row := range g.Rows {
		for _, cell := range row.Cells {
			if cell.Refusal == nil {
				continue
			}
			refused++
			if n := cell.RefusalNotice; n == nil || english(t, n.Code, n.Params) != *cell.Refusal {
				t.Errorf("%d × %d: refusal %q, notice %+v", row.ContextTokens, cell.Concurrency, *cell.Refusal, cell.RefusalNotice)
			}
		}
	}
	if refused == 0 {
		t.Errorf("no cell refused: %s", rec.Body)
	}
}

// TestNoticesCarryTheirClauses: a trust check whose detail holds clauses
// of their own (how the bandwidth is split, the KV read, the calibration)
// has each as a part, by the parameter's name, whose English is the
// parameter's text.
func TestNoticesCarryTheirClauses(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	rec := e.do(t, "GET", "/v1/runs/"+fara.ID, nil)
	var r api.Run
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range r.Trust.Checks {
		if c.Notice.Code != "trust.bandwidth_detail" {
			continue
		}
		found = true
		if c.Notice.Parts == nil {
			t.Fatalf("the bandwidth check's notice has no parts: %+v", c.Notice)
		}
		for _, name := range []string{"split", "kv", "calibration", "bits_from"} {
			p, ok := (*c.Notice.Parts)[name]
			if !ok {
				t.Errorf("no part %s in %+v", name, *c.Notice.Parts)
				continue
			}
			if got := english(t, p.Code, p.Params); got != c.Notice.Params[name] {
				t.Errorf("part %s (%s) says %q, the parameter %q", name, p.Code, got, c.Notice.Params[name])
			}
		}
	}
	if !found {
		t.Fatalf("fara has no bandwidth check: %+v", r.Trust.Checks)
	}
}
