package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server/guard"
	"github.com/matrixd/matrixd/server/textcheck"
	"github.com/matrixd/matrixd/store"
)

const problemJSON = "application/problem+json"

// errorHandler is the one place errors become HTTP answers: RFC 9457
// problems. Client errors say what to fix; server errors say only that
// something failed, and are logged here, once.
func errorHandler(logger *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := toProblem(err, c)
		c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		if p.Status == http.StatusUnauthorized {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="matrixd"`)
		}
		if p.Status == http.StatusMethodNotAllowed {
			withHead(c.Response().Header())
		}
		var fitting *predict.Fitting
		// A panic was logged with its stack; a run being fitted is not a
		// failure (the request log has it).
		if p.Status >= 500 && !errors.Is(err, errPanic) && !errors.As(err, &fitting) {
			logger.LogAttrs(c.Request().Context(), slog.LevelError, "request failed",
				slog.String("method", c.Request().Method), slog.String("uri", logURI(c.Request().RequestURI)),
				slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
				slog.String("error", err.Error()))
		}
		body, merr := json.Marshal(p)
		if merr != nil {
			body = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"code":"problem.internal_server_error","params":{"detail":""}}`)
			p.Status = http.StatusInternalServerError
		}
		if err := c.Blob(p.Status, problemJSON, body); err != nil {
			logger.LogAttrs(c.Request().Context(), slog.LevelWarn, "write problem", slog.String("error", err.Error()))
		}
	}
}

// withHead adds HEAD to an Allow header that has GET: every GET route
// answers HEAD too (see headAsGet), which the router does not know.
func withHead(h http.Header) {
	var methods []string
	for m := range strings.SplitSeq(h.Get(echo.HeaderAllow), ",") {
		if m = strings.TrimSpace(m); m != "" && m != http.MethodHead {
			methods = append(methods, m)
			if m == http.MethodGet {
				methods = append(methods, http.MethodHead)
			}
		}
	}
	if len(methods) > 0 {
		h.Set(echo.HeaderAllow, strings.Join(methods, ", "))
	}
}

// problem is a problem whose detail has no code of its own: it has its
// status's, the detail its parameter.
func problem(status int, detail string) api.Problem {
	code, ok := statusCodes[status]
	if !ok {
		code = "problem.error"
	}
	return problemOf(status, msg.New(code, detail))
}

// problemOf is a problem saying m.
func problemOf(status int, m msg.Message) api.Problem {
	p := api.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: m.Code, Params: m.Map(), Parts: toAPINotice(m).Parts}
	if m.Text != "" {
		p.Detail = &m.Text
	}
	return p
}

// statusCodes are the codes of problems without one of their own.
var statusCodes = map[int]string{
	http.StatusBadRequest:            "problem.bad_request",
	http.StatusUnauthorized:          "problem.unauthorized",
	http.StatusForbidden:             "problem.forbidden",
	http.StatusNotFound:              "problem.not_found",
	http.StatusMethodNotAllowed:      "problem.method_not_allowed",
	http.StatusConflict:              "problem.conflict",
	http.StatusGone:                  "problem.gone",
	http.StatusRequestEntityTooLarge: "problem.content_too_large",
	http.StatusUnsupportedMediaType:  "problem.unsupported_media_type",
	http.StatusUnprocessableEntity:   "problem.unprocessable",
	http.StatusTooManyRequests:       "problem.too_many_requests",
	http.StatusInternalServerError:   "problem.internal_server_error",
	http.StatusServiceUnavailable:    "problem.service_unavailable",
}

func toProblem(err error, c echo.Context) api.Problem {
	req := c.Request()
	var p api.Problem
	var herr *echo.HTTPError
	var fe *store.FieldError
	var fs fieldErrors
	var refusal *calculator.Refusal
	var amb *predict.Ambiguous
	var ve *store.ValidationError
	var pe *ingest.ParseError
	var de *store.Error
	var mal malformed
	var um unsupportedMedia
	var tm guard.TooMany
	var te textcheck.Error
	var fitting *predict.Fitting
	switch {
	case errors.As(err, &fitting):
		c.Response().Header().Set("Retry-After", strconv.Itoa(guard.RetryAfter(fitting.RetryAfter)))
		p = problem(http.StatusServiceUnavailable, fitting.Error())
	case errors.As(err, &tm):
		p = problem(http.StatusTooManyRequests, tm.Error())
	case errors.As(err, &fs):
		p = fs.problem()
	case errors.As(err, &te):
		for _, f := range te {
			fs = append(fs, fieldError(f.Name, f.Message))
		}
		p = fs.capped().problem()
	case errors.As(err, &fe):
		p = fieldErrors{fieldNotice(fe.Field, msg.Of(fe.Code, fe.Params, fe.Message))}.problem()
	case errors.As(err, &ve):
		p = invalidRun(ve.Problems)
	case errors.As(err, &mal):
		p = problem(http.StatusBadRequest, mal.Error())
	case errors.Is(err, http.ErrMissingBoundary), errors.Is(err, http.ErrNotMultipart):
		p = problemOf(http.StatusBadRequest, msg.New("problem.multipart_unreadable"))
	case errors.As(err, &pe):
		p = invalidRun([]store.Problem{{File: pe.File, Line: pe.Line, Message: pe.Msg}})
	case errors.As(err, &um):
		p = problem(http.StatusUnsupportedMediaType, string(um))
	case errors.As(err, &de) && de.Code != "":
		p = problemOf(domainStatus(de.Kind), msg.Of(de.Code, de.Params, de.Msg))
	case errors.As(err, &de):
		p = problem(domainStatus(de.Kind), de.Msg)
	case errors.As(err, &refusal):
		p = problemOf(http.StatusUnprocessableEntity, refusal.Message)
		if refusal.Message.Code == "" {
			p = problem(http.StatusUnprocessableEntity, refusal.Reason)
		}
		if refusal.Supported != "" {
			p.Supported, p.SupportedNotice = &refusal.Supported, notice(refusal.SupportedMessage)
		}
	case errors.As(err, &amb):
		p = problem(http.StatusUnprocessableEntity, amb.Error())
		candidates := toAPICandidates(amb)
		p.Candidates = &candidates
	case errors.Is(err, store.ErrUnauthorized):
		p = problemOf(http.StatusUnauthorized, msg.New("problem.api_key_needed"))
	case errors.As(err, &herr):
		p = httpProblem(herr, req)
	default:
		id := c.Response().Header().Get(echo.HeaderXRequestID)
		p = problemOf(http.StatusInternalServerError, msg.New("problem.server_failed", id))
	}
	instance := clip(req.URL.Path)
	p.Instance = &instance
	return p
}

// domainStatus maps the store's error kinds to HTTP: the one table.
func domainStatus(kind error) int {
	switch kind {
	case store.ErrNotFound:
		return http.StatusNotFound
	case store.ErrConflict:
		return http.StatusConflict
	case store.ErrForbidden:
		return http.StatusForbidden
	case store.ErrUnauthorized:
		return http.StatusUnauthorized
	case store.ErrInvalid:
		return http.StatusBadRequest
	case store.ErrGone:
		return http.StatusGone
	}
	return http.StatusInternalServerError
}

// unsupportedMedia is a body of a type the operation does not take; the
// text says which it takes.
type unsupportedMedia string

func (u unsupportedMedia) Error() string { return string(u) }

// invalidRun is the 422 listing every problem of a submitted run.
func invalidRun(probs []store.Problem) api.Problem {
	p := problemOf(http.StatusUnprocessableEntity, msg.New("problem.invalid_run", (&store.ValidationError{Problems: probs}).Error()))
	list := make([]api.FieldError, len(probs))
	for i, pr := range probs {
		pointer := pr.Pointer
		list[i] = api.FieldError{Pointer: &pointer, Message: pr.Message}
		if pr.File != "" {
			list[i].File = &pr.File
		}
		if pr.Line > 0 {
			list[i].Line = &pr.Line
		}
	}
	p.Errors = &list
	return p
}

func fieldError(field, message string) api.FieldError {
	return api.FieldError{Field: &field, Message: message}
}

// fieldNotice is the problem of a parameter that m says, with its code.
func fieldNotice(field string, m msg.Message) api.FieldError {
	return noticeOf(api.FieldError{Field: &field}, m)
}

// noticeOf is f saying m: its English and, where m has a code, the code.
func noticeOf(f api.FieldError, m msg.Message) api.FieldError {
	f.Message = m.Text
	if m.Code != "" {
		n := toAPINotice(m)
		f.Notice = &n
	}
	return f
}

func httpProblem(herr *echo.HTTPError, req *http.Request) api.Problem {
	switch herr.Code {
	case http.StatusBadRequest:
		if herr.Internal != nil {
			return fieldErrors(validationErrors(herr.Internal)).capped().problem()
		}
	case http.StatusNotFound:
		return problemOf(http.StatusNotFound, msg.New("problem.no_resource", clip(req.URL.Path)))
	case http.StatusMethodNotAllowed:
		return problemOf(http.StatusMethodNotAllowed, msg.New("problem.method_not_allowed_on", clip(req.Method), clip(req.URL.Path)))
	case http.StatusRequestEntityTooLarge:
		return problemOf(http.StatusRequestEntityTooLarge, msg.New("problem.body_too_large"))
	}
	if herr.Code >= 500 {
		return problem(herr.Code, "")
	}
	return problem(herr.Code, fmt.Sprint(herr.Message))
}

// fieldErrors is a request with several bad parameters, each named.
type fieldErrors []api.FieldError

func (f fieldErrors) Error() string {
	msgs := make([]string, len(f))
	for i, e := range f {
		msgs[i] = deref(e.Field) + ": " + e.Message
	}
	return strings.Join(msgs, "; ")
}

// problem is the 400 naming every bad parameter.
func (f fieldErrors) problem() api.Problem {
	m := msg.New("problem.invalid_request", f.Error())
	if len(f) > 3 {
		m = msg.New("problem.invalid_request_more", fieldErrors(f[:3]).Error(), len(f)-3)
	}
	p := problemOf(http.StatusBadRequest, m)
	list := []api.FieldError(f)
	p.Errors = &list
	return p
}

// validationErrors turns the validator's errors into one entry per parameter.
func validationErrors(err error) []api.FieldError {
	var errs []error
	var me openapi3.MultiError
	if errors.As(err, &me) {
		errs = me
	} else {
		errs = []error{err}
	}
	out := make([]api.FieldError, 0, len(errs))
	for _, e := range errs {
		var re *openapi3filter.RequestError
		if !errors.As(e, &re) {
			out = append(out, fieldError("request", e.Error()))
			continue
		}
		field := "request"
		switch {
		case re.Parameter != nil:
			field = re.Parameter.Name
		case re.RequestBody != nil:
			field = "body"
		}
		out = append(out, fieldNotice(field, reason(re)))
	}
	return out
}

// schemaReason is a schema error's reason, with a bound written as in
// openapi.yaml (16777216, not 1.6777216e+07).
func schemaReason(se *openapi3.SchemaError) msg.Message {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	var inner *openapi3.SchemaError
	switch s := se.Schema; {
	case se.SchemaField == "allOf" && errors.As(se.Origin, &inner) && inner != se:
		return schemaReason(inner) // a $ref wrapped to take a default: its own reason, such as the allowed values
	case s == nil:
	case se.SchemaField == "maximum" && s.Max != nil:
		return msg.New("problem.param_at_most", num(*s.Max))
	case se.SchemaField == "minimum" && s.Min != nil:
		return msg.New("problem.param_at_least", num(*s.Min))
	case se.SchemaField == "minItems" && s.MinItems > 0:
		return msg.New("problem.param_min_items", s.MinItems)
	case se.SchemaField == "maxItems" && s.MaxItems != nil:
		return msg.New("problem.param_max_items", *s.MaxItems)
	case se.SchemaField == "enum":
		if allowed, ok := strings.CutPrefix(se.Reason, "value is not one of the allowed values "); ok {
			return msg.New("problem.param_not_allowed", allowed)
		}
	}
	return msg.Message{Text: se.Reason}
}

// reason is what a request error says, with a code where it has one.
func reason(re *openapi3filter.RequestError) msg.Message {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return schemaReason(se)
	}
	var pe *openapi3filter.ParseError
	if errors.As(re.Err, &pe) {
		// A list's item is wrapped in a parse error of the list, with
		// no reason of its own: say the item's.
		for pe.Reason == "" {
			inner, ok := pe.Cause.(*openapi3filter.ParseError)
			if !ok {
				break
			}
			pe = inner
		}
		if pe.Reason == "" && pe.Cause != nil {
			return msg.Message{Text: clip(pe.Cause.Error())}
		}
		if errors.Is(pe.Cause, strconv.ErrRange) && re.Parameter != nil && re.Parameter.Schema != nil && re.Parameter.Schema.Value != nil {
			// Too many digits to read is out of the parameter's range,
			// said as a value within it would be.
			s, neg := re.Parameter.Schema.Value, strings.HasPrefix(fmt.Sprint(pe.Value), "-")
			switch {
			case !neg && s.Max != nil:
				return msg.New("problem.param_at_most", strconv.FormatFloat(*s.Max, 'f', -1, 64))
			case neg && s.Min != nil:
				return msg.New("problem.param_at_least", strconv.FormatFloat(*s.Min, 'f', -1, 64))
			}
		}
		if code, ok := map[string]string{"an invalid integer": "problem.param_not_integer", "an invalid number": "problem.param_not_number",
			"an invalid boolean": "problem.param_not_boolean"}[pe.Reason]; ok {
			return msg.New(code, clip(fmt.Sprint(pe.Value)))
		}
		return msg.Message{Text: pe.Reason + ": " + clip(fmt.Sprint(pe.Value))}
	}
	var me openapi3.MultiError
	if errors.As(re.Err, &me) && len(me) > 0 {
		var parts []msg.Message
		for _, e := range me {
			if errors.As(e, &se) {
				parts = append(parts, schemaReason(se))
			} else {
				parts = append(parts, msg.Message{Text: e.Error()})
			}
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return msg.Message{Text: strings.Join(msg.Texts(parts), "; ")}
	}
	if re.Err != nil {
		return msg.Message{Text: re.Err.Error()}
	}
	return msg.Message{Text: re.Reason}
}
