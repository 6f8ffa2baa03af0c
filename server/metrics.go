package server

import (
	"bytes"
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	cache    *prometheus.CounterVec
	fit      prometheus.Histogram
}

func newMetrics(pools func() map[string]sql.DBStats) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matrixd_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matrixd_http_request_duration_seconds", Help: "Time to answer, by route and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matrixd_response_cache_requests_total", Help: "GETs answered from prepared bytes (hit) or computed (miss).",
		}, []string{"result"}),
		fit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "matrixd_calculator_fit_seconds", Help: "Time to fit one run's calculator model.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.cache, m.fit,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newDBCollector(pools))
	return m
}

// watchFits reports the fits calc keeps and the bytes they hold.
func (m *metrics) watchFits(calc *predict.Service) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "matrixd_calculator_fit_cache_bytes", Help: "Bytes the calculator's kept fits hold, as they estimate it.",
		}, func() float64 { _, b := calc.CacheStats(); return float64(b) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "matrixd_calculator_fit_cache_fits", Help: "Fits the calculator keeps.",
		}, func() float64 { n, _ := calc.CacheStats(); return float64(n) }),
	)
}

func (m *metrics) cacheResult(hit bool) {
	if hit {
		m.cache.WithLabelValues("hit").Inc()
	} else {
		m.cache.WithLabelValues("miss").Inc()
	}
}

// observe counts every answer by its route template (not its path, which
// would make a series per run id).
func (m *metrics) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // render now, so the status is known
		}
		route := c.Path()
		if route == "" {
			route = "unrouted"
		}
		method := c.Request().Method
		m.requests.WithLabelValues(route, method, strconv.Itoa(c.Response().Status)).Inc()
		m.latency.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		return nil
	}
}

// dbCollector reports the connection pools' statistics.
type dbCollector struct {
	pools                    func() map[string]sql.DBStats
	open, inUse, waits, wait *prometheus.Desc
}

func newDBCollector(pools func() map[string]sql.DBStats) dbCollector {
	pool := []string{"pool"}
	return dbCollector{pools: pools,
		open:  prometheus.NewDesc("matrixd_db_connections_open", "Open connections, by pool.", pool, nil),
		inUse: prometheus.NewDesc("matrixd_db_connections_in_use", "Connections in use, by pool.", pool, nil),
		waits: prometheus.NewDesc("matrixd_db_waits_total", "Times a query waited for a connection, by pool.", pool, nil),
		wait:  prometheus.NewDesc("matrixd_db_wait_seconds_total", "Time spent waiting for a connection, by pool.", pool, nil),
	}
}

func (d dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.open
	ch <- d.inUse
	ch <- d.waits
	ch <- d.wait
}

func (d dbCollector) Collect(ch chan<- prometheus.Metric) {
	for pool, s := range d.pools() {
		ch <- prometheus.MustNewConstMetric(d.open, prometheus.GaugeValue, float64(s.OpenConnections), pool)
		ch <- prometheus.MustNewConstMetric(d.inUse, prometheus.GaugeValue, float64(s.InUse), pool)
		ch <- prometheus.MustNewConstMetric(d.waits, prometheus.CounterValue, float64(s.WaitCount), pool)
		ch <- prometheus.MustNewConstMetric(d.wait, prometheus.CounterValue, s.WaitDuration.Seconds(), pool)
	}
}

// GetMetrics implements GET /metrics.
func (s *Server) GetMetrics(ctx context.Context, _ api.GetMetricsRequestObject) (api.GetMetricsResponseObject, error) {
	families, err := s.metrics.reg.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	enc := expfmt.NewEncoder(&buf, format)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
	}
	return metricsText{body: buf.Bytes(), contentType: string(format)}, nil
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
