package server_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store/storetest"
)

var titleLine = regexp.MustCompile(`"title": "[^"]*",`)

// TestPatchDecodesAsStrictlyAsPost: a body POST refuses is refused by
// PATCH too, and stores nothing.
func TestPatchDecodesAsStrictlyAsPost(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	good := runJSON(t, storetest.Runs(61, 1)[0])
	created := e.send(t, "POST", "/v1/runs", k["alice"], good)
	if created.Code != 201 {
		t.Fatalf("POST: %d %s", created.Code, created.Body)
	}
	id := decodeRun(t, created.Body.Bytes()).ID
	cases := []struct {
		name     string
		post     string // a change to the run JSON that POST refuses
		patch    string // the same fault in a merge patch
		contains string
	}{
		{"duplicate key", `"title":"a","title":"b",`, `{"title":"a","title":"b"}`, "twice"},
		{"invalid UTF-8", "\"title\":\"a\xff\",", "{\"title\":\"a\xff\"}", "UTF-8"},
		{"lone surrogate", `"title":"a\ud800",`, `{"title":"a\ud800"}`, "surrogate"},
		{"lone low surrogate", `"title":"a\udc00b",`, `{"title":"a\udc00b"}`, "surrogate"},
		{"case-folded key", `"TITLE":"a",`, `{"TITLE":"a"}`, "TITLE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := titleLine.ReplaceAll(good, []byte(c.post))
			post := e.send(t, "POST", "/v1/runs", k["alice"], body)
			if post.Code < 400 || post.Code >= 500 {
				t.Fatalf("POST: %d %s; want a 4xx", post.Code, post.Body)
			}
			before := e.rows(t)
			patch := e.send(t, "PATCH", "/v1/runs/"+id, with(k["alice"], "Content-Type", "application/merge-patch+json"), []byte(c.patch))
			if patch.Code != post.Code || !strings.Contains(patch.Body.String(), c.contains) {
				t.Errorf("PATCH: %d %s; want %d (as POST) naming %q", patch.Code, patch.Body, post.Code, c.contains)
			}
			e.sameRows(t, before)
		})
	}
}

// TestCharsetOtherThanUTF8Is415: a body said to be in another charset
// would be misread, so it is refused on every write.
func TestCharsetOtherThanUTF8Is415(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	body := runJSON(t, storetest.Runs(62, 1)[0])
	for _, ct := range []string{"application/json; charset=utf-16", "application/json; charset=ISO-8859-1"} {
		before := e.rows(t)
		rec := e.send(t, "POST", "/v1/runs", with(k["alice"], "Content-Type", ct), body)
		if rec.Code != 415 || !strings.Contains(rec.Body.String(), "UTF-8") {
			t.Errorf("POST with %s: %d %s; want 415 asking for UTF-8", ct, rec.Code, rec.Body)
		}
		e.sameRows(t, before)
	}
	seed := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	rec := e.send(t, "PATCH", "/v1/runs/"+seed.ID, with(k["alice"], "Content-Type", "application/merge-patch+json; charset=utf-16"), []byte(`{"title":"x"}`))
	if rec.Code != 415 {
		t.Errorf("PATCH with charset=utf-16: %d %s; want 415", rec.Code, rec.Body)
	}
	for _, ct := range []string{"application/json; charset=UTF-8", "application/json; charset=us-ascii"} {
		if rec := e.send(t, "POST", "/v1/runs", with(k["alice"], "Content-Type", ct), body); rec.Code != 201 && rec.Code != 200 {
			t.Errorf("POST with %s: %d %s; want it taken", ct, rec.Code, rec.Body)
		}
	}
}

// TestSecretsInQueriesAreNotLogged: a client that puts its key in the
// query string does not have it written into the server's log.
func TestSecretsInQueriesAreNotLogged(t *testing.T) {
	var logs bytes.Buffer
	e := newEnvWith(t, 0, server.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	const secret = "mxd_s3cr3tT0k3nValue"
	for _, target := range []string{
		"/v1/runs?api_key=" + secret,
		"/v1/runs?model=x&access_token=" + secret + "&gpu=y",
		"/v1/runs?Api%5FKey=" + secret,
	} {
		e.do(t, "GET", target, nil)
		e.send(t, "POST", target, http.Header{"Content-Type": {"application/json"}}, []byte(`{}`))
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log repeats a secret sent in the query:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "api_key=REDACTED") || !strings.Contains(logs.String(), "model=x") {
		t.Errorf("the log should name the redacted parameter and keep the others:\n%.2000s", logs.String())
	}
}
