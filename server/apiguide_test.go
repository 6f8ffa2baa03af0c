package server_test

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestAPIGuideCoversSpec fails when an operation of openapi.yaml is missing
// from docs/api.md: the guide must name its operationId and path template,
// and show a curl command that calls that path with that method.
func TestAPIGuideCoversSpec(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	guide := string(b)
	// A command continued over lines with a backslash is one command.
	curls := curlCommands(strings.ReplaceAll(guide, "\\\n", " "))

	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			name := method + " " + path + " (" + op.OperationID + ")"
			if !strings.Contains(guide, "`"+op.OperationID+"`") && !strings.Contains(guide, op.OperationID+":") {
				t.Errorf("%s: docs/api.md does not name the operationId", name)
			}
			if !strings.Contains(guide, path) {
				t.Errorf("%s: docs/api.md does not mention the path", name)
			}
			if !hasCurl(curls, method, path) {
				t.Errorf("%s: docs/api.md has no curl example calling it", name)
			}
		}
	}
	if n < 40 {
		t.Fatalf("read only %d operations from openapi.yaml", n)
	}
}

func curlCommands(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "curl "); i >= 0 {
			out = append(out, line[i:])
		}
	}
	return out
}

// hasCurl reports whether one of the commands calls path (its parameters
// filled with anything but a slash) with method: -X METHOD, or no -X for GET.
func hasCurl(curls []string, method, path string) bool {
	pattern := regexp.QuoteMeta(path)
	pattern = regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(pattern, `[^/?"' ]+`)
	url := regexp.MustCompile(`localhost:8080` + pattern + `([?"' ]|$)`)
	for _, c := range curls {
		if !url.MatchString(c) {
			continue
		}
		explicit := regexp.MustCompile(`-X ([A-Z]+)`).FindStringSubmatch(c)
		switch {
		case method == http.MethodGet && explicit == nil:
			return true
		case explicit != nil && explicit[1] == method:
			return true
		}
	}
	return false
}
