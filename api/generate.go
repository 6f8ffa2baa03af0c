// Package api holds the code generated from ../openapi.yaml. Do not edit api.gen.go.
package api

import (
	"bytes"
	_ "embed"
)

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
//go:generate cp ../openapi.yaml openapi.yaml

//go:embed openapi.yaml
var specYAML []byte

// SpecYAML returns openapi.yaml as written. GetSpec's copy has its
// operationIds renamed by the generator, so it is not what clients read.
func SpecYAML() []byte { return bytes.Clone(specYAML) }
