package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestPanicIsLoggedWithItsStack: a panicking handler answers a 500 that
// says nothing internal, and the log has the panic, its stack and the
// request id, once.
func TestPanicIsLoggedWithItsStack(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(logger)
	e.Use(recoverer(logger))
	e.GET("/boom", func(echo.Context) error { panic("secret internal detail") })
	req := httptest.NewRequest("GET", "/boom", nil)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "secret") || rec.Header().Get("Content-Type") != problemJSON {
		t.Errorf("answer %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"panic"`) || !strings.Contains(out, "secret internal detail") || !strings.Contains(out, "recover_test.go") {
		t.Errorf("log lacks the panic or its stack:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("%d log lines for one panic, want 1:\n%s", n, out)
	}
}
