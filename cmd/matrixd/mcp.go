package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
)

// mcpCmd serves the tools of POST /mcp over stdin and stdout, for an agent
// that starts matrixd itself.
func mcpCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCLI("mcp", "[--db PATH]",
		"Serve the API's read operations as Model Context Protocol tools over stdin and\nstdout, for an AI agent on this machine (docs/agents.md). Warnings and errors\nare logged to stderr as JSON.")
	fs := c.fs
	db := dbFlag(fs, getenv, false)
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	// The calculator is closed before the store, as in serve.
	calc := predict.New(st, predict.DefaultCacheBytes, nil)
	defer calc.Close()
	if _, err := recheck(ctx, st); err != nil {
		return err
	}
	srv, err := server.NewAgent(st, server.Config{Logger: logger, Calc: calc})
	if err != nil {
		return err
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopCloser{stdout}})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil // the agent hung up, or the process was told to stop
	}
	return err
}

// nopCloser leaves stdout open when the transport closes.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
