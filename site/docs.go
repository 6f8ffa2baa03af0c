package site

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

// The API reference at /docs: Redoc's standalone bundle (fetched, pinned
// and checked by docs/fetch.sh) renders /openapi.json in the browser.
// Everything comes from this server, so the page works offline and its
// policy names no other origin.

// redocLogo is where the pinned bundle draws Redocly's logo beside its
// "API docs by Redocly" link, from Redocly's CDN; the policy blocks it (a
// console error), and offline it could not load. The bundle is served
// without that image; the link and its text stay.
var redocLogo = [2]string{
	`e?n.createElement("img",{alt:"redocly logo",onError:()=>t(!1),src:"https://cdn.redoc.ly/redoc/logo-mini.svg"}):null`,
	`null`,
}

//go:embed docs/index.html docs/redoc.standalone.js
var docsFiles embed.FS

const (
	// docsCSP allows what Redoc does: its script and the contract from
	// here, the styles it injects as it renders (styled-components), and
	// its search index in a worker it makes from a blob.
	docsCSP = "default-src 'none'; script-src 'self'; worker-src blob:; connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	// docsAssetCache: an asset's name holds a hash of its content.
	docsAssetCache = "public, max-age=31536000, immutable"
	docsAssetPath  = "/docs/assets/"
)

type docsContent struct {
	page       []byte
	scriptName string
	script     []byte
}

// docs is built once from the embedded files, which change only with the
// binary.
var docs = sync.OnceValue(func() docsContent {
	script, err := docsFiles.ReadFile("docs/redoc.standalone.js")
	if err != nil {
		panic(err) // embedded at build time: a missing file is a build mistake
	}
	if bytes.Count(script, []byte(redocLogo[0])) != 1 {
		panic("docs/redoc.standalone.js does not draw its logo as redocLogo says: update it with the bundle")
	}
	script = bytes.Replace(script, []byte(redocLogo[0]), []byte(redocLogo[1]), 1)
	sum := sha256.Sum256(script)
	name := "redoc.standalone." + hex.EncodeToString(sum[:6]) + ".js"
	tmpl := template.Must(template.ParseFS(docsFiles, "docs/index.html"))
	var page bytes.Buffer
	if err := tmpl.Execute(&page, struct{ Script string }{docsAssetPath + name}); err != nil {
		panic(err)
	}
	return docsContent{page: page.Bytes(), scriptName: name, script: script}
})

// registerDocs gives the answers under /docs their own policy and caching.
// The response cache replays only some headers and sets Cache-Control, so
// these are set as the answer is sent, below it.
func registerDocs(e *echo.Echo) {
	e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			w := &docsWriter{}
			switch p := c.Request().URL.Path; {
			case p == "/docs":
				w.csp = docsCSP
			case strings.HasPrefix(p, docsAssetPath):
				w.cacheControl = docsAssetCache
			default:
				return next(c)
			}
			res := c.Response()
			w.ResponseWriter = res.Writer
			res.Writer = w
			return next(c)
		}
	})
}

// GetDocs implements GET /docs.
func (s *Site) GetDocs(ctx context.Context, _ api.GetDocsRequestObject) (api.GetDocsResponseObject, error) {
	return docsBody{contentType: "text/html; charset=utf-8", body: docs().page}, nil
}

// GetDocsAsset implements GET /docs/assets/{file}.
func (s *Site) GetDocsAsset(ctx context.Context, req api.GetDocsAssetRequestObject) (api.GetDocsAssetResponseObject, error) {
	d := docs()
	if req.File != d.scriptName {
		return nil, &store.Error{Kind: store.ErrNotFound, Msg: "no asset " + s.req.Clip(req.File) + "; the page names the current ones"}
	}
	return docsBody{contentType: "text/javascript; charset=utf-8", body: d.script}, nil
}

// docsBody is an embedded file as an answer.
type docsBody struct {
	contentType string
	body        []byte
}

func (b docsBody) VisitGetDocsResponse(w http.ResponseWriter) error      { return b.write(w) }
func (b docsBody) VisitGetDocsAssetResponse(w http.ResponseWriter) error { return b.write(w) }

func (b docsBody) write(w http.ResponseWriter) error {
	w.Header().Set(echo.HeaderContentType, b.contentType)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.body)
	return err
}

// docsWriter sets the policy and caching of a docs answer that succeeds
// as its header is written.
type docsWriter struct {
	http.ResponseWriter
	csp, cacheControl string
	wroteHeader       bool
}

func (w *docsWriter) WriteHeader(status int) {
	if !w.wroteHeader && (status == http.StatusOK || status == http.StatusNotModified) {
		h := w.Header()
		if w.csp != "" {
			h.Set("Content-Security-Policy", w.csp)
		}
		if w.cacheControl != "" {
			h.Set(echo.HeaderCacheControl, w.cacheControl)
		}
	}
	w.wroteHeader = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *docsWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *docsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
