package server

import (
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
)

// TestLogsKeepTheAPIsParameters: request logs redact query parameters
// that may carry a credential, but none of the API's own (context_tokens
// is a token count, not a token).
func TestLogsKeepTheAPIsParameters(t *testing.T) {
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			for _, ref := range append(item.Parameters, op.Parameters...) {
				if p := ref.Value; p.In == "query" {
					seen++
					if got := logURI("/x?" + p.Name + "=7"); got != "/x?"+p.Name+"=7" {
						t.Errorf("parameter %s is logged as %s", p.Name, got)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no query parameter in the spec")
	}
	for _, secret := range []string{"api_key", "token", "access_token", "X-Signature"} {
		if got := logURI("/x?" + secret + "=s3cr3t"); strings.Contains(got, "s3cr3t") {
			t.Errorf("%s is logged: %s", secret, got)
		}
	}
}
