package server

import (
	"context"
	"net/http"

	"github.com/matrixd/matrixd/api"
)

// GetMetrics implements GET /metrics.
func (s *Server) GetMetrics(ctx context.Context, _ api.GetMetricsRequestObject) (api.GetMetricsResponseObject, error) {
	body, contentType, err := s.metrics.Text()
	if err != nil {
		return nil, err
	}
	return metricsText{body: body, contentType: contentType}, nil
}

type metricsText struct {
	body        []byte
	contentType string
}

func (t metricsText) VisitGetMetricsResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", t.contentType)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(t.body)
	return err
}
