// Package client is a Go client of the matrixd API, generated from
// ../../openapi.yaml with its types. Do not edit client.gen.go.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../openapi.yaml
