package msg

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestNewWritesTheTemplate(t *testing.T) {
	m := New("calculator.context_beyond_longest", 262144, 2.0, 32768)
	want := "context 262144 tokens is beyond 2× the longest context at which this run measured a speed (32768 tokens)"
	if m.Text != want {
		t.Errorf("text %q, want %q", m.Text, want)
	}
	if got := m.Map(); got["context"] != "262144" || got["reach"] != "2" || got["longest"] != "32768" || len(got) != 3 {
		t.Errorf("params %v", got)
	}
	// A parameter named twice takes one argument.
	if m := New("predict.series_newest", 50); m.Text != "the series has more than 50 runs: the newest 50 are lined up" || len(m.Params) != 1 {
		t.Errorf("%q %v", m.Text, m.Params)
	}
	if m := New("no.such_code", 1); m.Text != "no.such_code" {
		t.Errorf("undeclared code says %q", m.Text)
	}
}

func TestRender(t *testing.T) {
	c := Catalog{"th": {Key("predict.series_newest"): "ชุดนี้มีเกิน {runs} รัน"}}
	m := New("predict.series_newest", 50)
	if got := Render(c, "th", m); got != "ชุดนี้มีเกิน 50 รัน" {
		t.Errorf("th: %q", got)
	}
	if got := Render(c, "fr", m); got != m.Text {
		t.Errorf("a language without the code: %q, want the English", got)
	}
	// As a client has it from the API: code, params and the English.
	if got := Render(c, "th", Of(m.Code, m.Map(), m.Text)); got != "ชุดนี้มีเกิน 50 รัน" {
		t.Errorf("th from the API's notice: %q", got)
	}
}

// BenchmarkNew writes a warning with three parameters.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		New("calculator.context_beyond_longest", 262144, 2.0, 32768)
	}
}

// TestTemplatesAreWellFormed: every code is named as clients key on it,
// and its placeholders read back as written.
func TestTemplatesAreWellFormed(t *testing.T) {
	name := regexp.MustCompile(`^[a-z]+\.[a-z0-9_]+$`)
	for _, code := range Codes() {
		if !name.MatchString(code) {
			t.Errorf("code %q: want package.snake_case", code)
		}
		tpl, _ := Template(code)
		for _, p := range parse(templates[code]) {
			if p.name != "" && !strings.HasPrefix(p.verb, "%") {
				t.Errorf("%s: verb %q", code, p.verb)
			}
		}
		if strings.Contains(strings.ReplaceAll(tpl, "{", ""), "}") && len(Placeholders(tpl)) == 0 {
			t.Errorf("%s: stray brace in %q", code, tpl)
		}
	}
}

// codeLiteral is how a code is written in Go: a string literal naming a
// package's message.
var codeLiteral = regexp.MustCompile(`^(calculator|predict|trust|history|assess|problem|api)\.[a-z0-9_]+$`)

// isCode reports whether s is written as a code (not a file name).
func isCode(s string) bool {
	switch filepath.Ext(s) {
	case ".go", ".html", ".js", ".css", ".json", ".md", ".yaml":
		return false
	}
	return codeLiteral.MatchString(s)
}

// TestEveryCodeInGoIsDeclared reads the module's Go files: each string that
// is a code must be declared, each call of New (or a constructor taking a
// code then its arguments) must give as many arguments as the template
// names, and each declared code must be used.
func TestEveryCodeInGoIsDeclared(t *testing.T) {
	used := map[string]bool{}
	// The functions that take a code at argument i, followed by its
	// arguments (-1: the code is the last argument, no arguments follow).
	takers := map[string]int{"New": 0, "refuse": 1, "unknownGPU": -1, "problemOf": -1}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".gen.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil || !isCode(s) {
					return true
				}
				used[s] = true
				if _, ok := templates[s]; !ok {
					t.Errorf("%s: code %q is not declared", fset.Position(n.Pos()), s)
				}
			case *ast.CallExpr:
				var fn string
				switch f := n.Fun.(type) {
				case *ast.Ident:
					fn = f.Name
				case *ast.SelectorExpr:
					if x, ok := f.X.(*ast.Ident); ok && x.Name == "msg" {
						fn = f.Sel.Name
					}
				}
				at, ok := takers[fn]
				if !ok || at < 0 || len(n.Args) <= at || n.Ellipsis.IsValid() {
					return true
				}
				for _, code := range literals(n.Args[at]) {
					if want, ok := Arity(code); ok && want != len(n.Args)-at-1 {
						t.Errorf("%s: %s takes %d arguments, given %d", fset.Position(n.Pos()), code, want, len(n.Args)-at-1)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range Codes() {
		if !used[code] {
			t.Errorf("code %q is declared but no Go code says it", code)
		}
	}
	if len(used) < 100 {
		t.Errorf("only %d codes found in the Go code: the reading misses some", len(used))
	}
}

// literals are the code strings in an expression: a literal, or each
// literal argument of a call choosing one (plural(n, "a_one", "a")).
func literals(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			if s, err := strconv.Unquote(l.Value); err == nil && isCode(s) && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

// TestEveryCodeIsDocumented: docs/api.md lists every code.
func TestEveryCodeIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range Codes() {
		tpl, _ := Template(code)
		if !strings.Contains(string(b), "| `"+code+"` | "+strings.ReplaceAll(tpl, "|", `\|`)+" |") {
			t.Errorf("docs/api.md, Message codes, lacks %s as %q", code, tpl)
		}
	}
}
