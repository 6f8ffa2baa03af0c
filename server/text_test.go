package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store/storetest"
)

// malformedText are the bytes no store takes as text: a NUL and a byte
// that is not UTF-8.
var malformedText = []string{"%00", "%FF"}

// TestMalformedTextIsRefused walks the spec: every string parameter in
// the path or query of every GET operation, given a NUL byte or a byte
// that is not UTF-8, is a 400 problem naming it, never a database error.
// Run with MATRIXD_TEST_API_STORE=postgres too: PostgreSQL refuses both.
func TestMalformedTextIsRefused(t *testing.T) {
	e := newEnv(t, 0)
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for path, item := range spec.Paths.Map() {
		op := item.Get
		if op == nil {
			continue
		}
		params := append(slices.Clone(item.Parameters), op.Parameters...)
		for _, ref := range params {
			p := ref.Value
			if (p.In != openapi3.ParameterInQuery && p.In != openapi3.ParameterInPath) || !isString(p.Schema) {
				continue
			}
			for _, bad := range malformedText {
				target := fillPath(path, params, p.Name, "a"+bad+"b")
				if p.In == openapi3.ParameterInQuery {
					target = fillPath(path, params, "", "") + "?" + p.Name + "=a" + bad + "b"
				}
				rec := e.do(t, http.MethodGet, target, nil)
				wantNamed(t, target, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes(), p.Name)
				checked++
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d requests checked: the walk of the spec missed its parameters", checked)
	}
	t.Logf("%d requests checked", checked)
}

// TestMalformedTextIsRefusedOnPages: the pages' routes (those the spec
// does not hold) refuse the same bytes in their query and their path the
// same way.
func TestMalformedTextIsRefusedOnPages(t *testing.T) {
	e := newEnv(t, 0)
	param := regexp.MustCompile(`:[a-z_]+|\*`)
	pages := 0
	for _, r := range server.Routes(e.h) {
		if r.Method != http.MethodGet || e.spec.Paths.Find(r.Path) != nil || strings.Contains(r.Path, ".") || strings.Contains(r.Path, "{") {
			continue
		}
		if _, _, err := e.router.FindRoute(mustRequest(t, strings.ReplaceAll(param.ReplaceAllString(r.Path, "x"), "*", "x"))); err == nil {
			continue // an operation of the spec, walked by TestMalformedTextIsRefused
		}
		pages++
		for _, bad := range malformedText {
			target := param.ReplaceAllString(r.Path, "x") + "?model=a" + bad + "b"
			rec := e.do(t, http.MethodGet, target, nil)
			wantNamed(t, target, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes(), "model")
			if names := param.FindAllString(r.Path, -1); len(names) > 0 {
				target := param.ReplaceAllString(r.Path, "a"+bad+"b")
				want := strings.TrimPrefix(names[0], ":")
				if want == "*" {
					want = "path"
				}
				rec := e.do(t, http.MethodGet, target, nil)
				wantNamed(t, target, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes(), want)
			}
		}
	}
	if pages < 10 {
		t.Fatalf("only %d pages checked", pages)
	}
	t.Logf("%d pages checked", pages)
}

func wantNamed(t *testing.T, target string, code int, contentType string, body []byte, name string) {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	if code != http.StatusBadRequest || contentType != "application/problem+json" || p.Errors == nil {
		t.Fatalf("GET %s: %d %s %s, want a 400 problem naming %s", target, code, contentType, body, name)
	}
	for _, fe := range *p.Errors {
		if fe.Field != nil && *fe.Field == name {
			return
		}
	}
	t.Fatalf("GET %s: the problem does not name %s: %s", target, name, body)
}

func isString(s *openapi3.SchemaRef) bool {
	return s != nil && s.Value != nil && s.Value.Type.Is(openapi3.TypeString)
}

// fillPath writes a path template's parameters: name as value, every other
// as a plain one.
func fillPath(path string, params openapi3.Parameters, name, value string) string {
	for _, ref := range params {
		if p := ref.Value; p.In == openapi3.ParameterInPath {
			v := "x"
			if p.Name == name {
				v = value
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", v)
		}
	}
	return path
}

func mustRequest(t *testing.T, target string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMalformedMultipartIsRefused: an import whose multipart framing
// cannot be read (no boundary, an empty or overlong one, a Content-Type
// that does not parse, a body without the boundary) is a 400 problem
// saying so, and stores nothing.
func TestMalformedMultipartIsRefused(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	before := e.rows(t)
	ct, body := multipartBody(t, toolFixture(t, "llama-pr16894.META.json"), "llama-pr16894-qwen2-7b.md")
	for _, c := range []struct {
		name, contentType string
		body              []byte
		want              string
	}{
		{"no boundary", "multipart/form-data", body, "boundary"},
		{"empty boundary", `multipart/form-data; boundary=""`, body, "boundary"},
		{"boundary too long", "multipart/form-data; boundary=" + strings.Repeat("b", 71), body, "boundary"},
		{"unreadable Content-Type", "multipart/form-data; boundary", body, "cannot be read"},
		{"body without the boundary", "multipart/form-data; boundary=other", body, "cannot be read"},
		{"parts cut short", ct, body[:len(body)/2], "cannot be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := e.send(t, http.MethodPost, "/v1/runs/import?format=llama-batched-bench", with(k["alice"], "Content-Type", c.contentType), c.body)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(rec.Body.String(), c.want) {
				t.Fatalf("%d %s %.500s; want a 400 problem saying %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body, c.want)
			}
		})
	}
	e.sameRows(t, before)
}

// TestRequestLogRedactsCredentials: the request log repeats no value of a
// query parameter whose name says it may be a credential, whatever its
// case and wherever the word sits in the name, nor of one without a name;
// the API's own parameters are logged as sent.
func TestRequestLogRedactsCredentials(t *testing.T) {
	var logs bytes.Buffer
	e := newEnvWith(t, 0, server.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	names := []string{
		"token", "key", "api_key", "apikey", "access_token", "bearer", "jwt", "pwd", "password", "passwd",
		"secret", "code", "auth", "authorization", "sig", "signature", "session", "sessionid", "x_api_key",
		"X-Api-Key", "Bearer", "JWT", "AccessToken", "client_secret", "oauth_code", "x%5Fapi%5Fkey", "",
	}
	for i, name := range names {
		secret := fmt.Sprintf("s3cr3t%02d", i)
		e.do(t, http.MethodGet, "/v1/runs?"+name+"="+secret, nil)
		e.do(t, http.MethodGet, "/v1/gpus?gpu=RTX&"+name+"="+secret+"&model=m", nil)
	}
	e.do(t, http.MethodGet, "/v1/runs?gpu=RTX%203090&model=qwen&limit=5", nil)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) < 2*len(names)+1 {
		t.Fatalf("%d log lines for %d requests", len(lines), 2*len(names)+1)
	}
	for _, line := range lines {
		var entry struct{ Msg, URI string }
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if strings.Contains(entry.URI, "s3cr3t") {
			t.Errorf("a credential is logged: %s", line)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"uri":"/v1/runs?gpu=RTX%203090&model=qwen&limit=5"`) {
		t.Errorf("the API's own parameters are not logged as sent: %s", last)
	}
}

// TestNamesThatOnlyLookAlike: a run whose GPU or model only looks like a
// name already in use (other scripts' letters, an O for a zero, an
// invisible character) is a 422 naming the field, stores nothing and
// adds no GPU to /v1/gpus; a name with a decomposed accent is stored as
// the composed one.
func TestNamesThatOnlyLookAlike(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	base := storetest.Runs(61, 1)[0]
	base.Hardware.GPU = "RTX 3060"
	if rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, base)); rec.Code != http.StatusCreated {
		t.Fatalf("the real run: %d %s", rec.Code, rec.Body)
	}
	before := e.rows(t)
	for _, c := range []struct{ gpu, model, pointer, want string }{
		{"RТХ 3060", "", "/hardware/gpu", "mixes letters of the Latin and Cyrillic scripts"},
		{"RTX 3O60", "", "/hardware/gpu", `reads as \"RTX 3060\" of the hardware catalog`},
		{"Н1ОО", "", "/hardware/gpu", `reads as \"H100`},
		{"RTX\u200b3060", "", "/hardware/gpu", "invisible character U+200B"},
		{"RTX 30\u00ad60", "", "/hardware/gpu", "invisible character U+00AD"},
		{"\ufeffRTX 3060", "", "/hardware/gpu", "invisible character U+FEFF"},
		{"RTX\u00a03060", "", "/hardware/gpu", "space U+00A0"},
		{"", "Llama-2-l3B", "/model/name", "Llama-2-13B"},
		{"", "Llama-2-13В", "/model/name", "mixes letters"},
		// Only the odd letter is offered plain: the l of Model1 stays a letter.
		{"", "LeaderboardModel1/Ｆara1.5-4B-AutoRound-W4A16-RTN", "/model/name", "it reads as (LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN)"},
	} {
		r := base
		if c.gpu != "" {
			r.Hardware.GPU = c.gpu
		}
		if c.model != "" {
			r.Model.Name = c.model
		}
		rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, r))
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"pointer":"`+c.pointer+`"`) || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("gpu %q model %q: %d %.600s; want a 422 at %s saying %s", c.gpu, c.model, rec.Code, rec.Body, c.pointer, c.want)
		}
	}
	e.sameRows(t, before)
	if gpus := e.do(t, http.MethodGet, "/v1/gpus", nil); strings.Count(gpus.Body.String(), "3060") != 1 {
		t.Errorf("/v1/gpus lists more than one RTX 3060: %s", gpus.Body)
	}
	accented := storetest.Runs(62, 1)[0]
	accented.Engine.Name = "ve\u0301llm"
	rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, accented))
	if rec.Code != http.StatusCreated || decodeRun(t, rec.Body.Bytes()).Engine.Name != "v\u00e9llm" {
		t.Errorf("a decomposed accent: %d %.300s; want it stored composed (NFC)", rec.Code, rec.Body)
	}
}

// TestDecomposedNamesFindComposed: names are stored in NFC, so a filter
// or a path segment that spells one decomposed (e and U+0301, as some
// keyboards and file systems write it) finds the composed name it
// spells, through the API and the pages, and is answered as the composed
// spelling is, not from a cached answer of another question.
func TestDecomposedNamesFindComposed(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	r := storetest.Runs(63, 1)[0]
	r.Model.Name = "Caf\u00e9-7B"
	r.Submitter = "Jos\u00e9"
	if rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, r)); rec.Code != http.StatusCreated {
		t.Fatalf("the run: %d %.300s", rec.Code, rec.Body)
	}
	for _, target := range []string{
		"/v1/runs?model=Cafe%CC%81",
		"/v1/runs?model=cafe%CC%81-7b&limit=5",
		"/v1/runs?submitter=Jose%CC%81",
		"/v1/submitters/Jose%CC%81",
	} {
		rec := e.do(t, http.MethodGet, target, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Caf\u00e9-7B") {
			t.Errorf("%s: %d %.300s; want the run of Caf\u00e9-7B by Jos\u00e9", target, rec.Code, rec.Body)
		}
	}
	for target, apiTarget := range map[string]string{"/?model=Cafe%CC%81": "/v1/runs", "/submitters/Jose%CC%81": "/v1/submitters/x"} {
		rec := e.page(t, target, apiTarget)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Caf\u00e9-7B") {
			t.Errorf("%s: %d; want the page to show the run of Caf\u00e9-7B", target, rec.Code)
		}
	}
}

// TestFreeTextOverHTTP: a flag's text, a moderator's reason and a run's
// title are held to the one text rule over HTTP too: bidirectional
// overrides and C1 controls are a 400 or 422 naming the field, bytes that
// are not UTF-8 a 400, and nothing is stored.
func TestFreeTextOverHTTP(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "admin")
	rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, storetest.Runs(63, 1)[0]))
	if rec.Code != http.StatusCreated {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	id := decodeRun(t, rec.Body.Bytes()).ID
	before := e.rows(t)
	for _, c := range []struct {
		method, target, contentType, key, body string
		status                                 int
		want                                   string
	}{
		{"POST", "/v1/runs/" + id + "/flags", "application/json", "alice", `{"reason":"other","text":"see \u202Efdp.exe"}`, 400, `"field":"text"`},
		{"POST", "/v1/runs/" + id + "/flags", "application/json", "alice", `{"reason":"other","text":"next\u0085line"}`, 400, "U+0085"},
		{"POST", "/v1/runs/" + id + "/flags", "application/json", "alice", "{\"reason\":\"other\",\"text\":\"a\xffb\"}", 400, "not valid UTF-8"},
		{"PUT", "/v1/runs/" + id + "/hidden", "application/json", "admin", `{"reason":"spam \u2067x"}`, 400, `"field":"reason"`},
		{"PUT", "/v1/runs/" + id + "/hidden", "application/json", "admin", "{\"reason\":\"a\xffb\"}", 400, "not valid UTF-8"},
		{"PATCH", "/v1/runs/" + id, "application/merge-patch+json", "alice", `{"title":"t\u009b31m"}`, 422, `"pointer":"/title"`},
	} {
		rec := e.send(t, c.method, c.target, with(k[c.key], "Content-Type", c.contentType), []byte(c.body))
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s %s %q: %d %.400s; want %d saying %s", c.method, c.target, c.body, rec.Code, rec.Body, c.status, c.want)
		}
	}
	e.sameRows(t, before)
}
