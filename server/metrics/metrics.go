// Package metrics holds the server's Prometheus metrics: requests by
// route, the response cache's hits and misses, the calculator's fits and
// the database pools, in a registry of its own.
package metrics

import (
	"bytes"
	"database/sql"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// Metrics are the server's Prometheus metrics, in a registry of its own.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	cache    *prometheus.CounterVec
	fit      prometheus.Histogram
}

// New returns the metrics, with pools the database pools' statistics.
func New(pools func() map[string]sql.DBStats) *Metrics {
	m := &Metrics{
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

// Fits is what keeps the calculator's fits (predict.Service).
type Fits interface {
	CacheStats() (fits int, bytes int64)
}

// WatchFits reports the fits calc keeps and the bytes they hold.
func (m *Metrics) WatchFits(calc Fits) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "matrixd_calculator_fit_cache_bytes", Help: "Bytes the calculator's kept fits hold, as they estimate it.",
		}, func() float64 { _, b := calc.CacheStats(); return float64(b) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "matrixd_calculator_fit_cache_fits", Help: "Fits the calculator keeps.",
		}, func() float64 { n, _ := calc.CacheStats(); return float64(n) }),
	)
}

// FitTook counts a fit of one run's calculator model that took d.
func (m *Metrics) FitTook(d time.Duration) { m.fit.Observe(d.Seconds()) }

// CacheResult counts a GET answered from the response cache (hit) or
// computed (miss).
func (m *Metrics) CacheResult(hit bool) {
	if hit {
		m.cache.WithLabelValues("hit").Inc()
	} else {
		m.cache.WithLabelValues("miss").Inc()
	}
}

// Observe counts every answer by its route template (not its path, which
// would make a series per run id).
func (m *Metrics) Observe(next echo.HandlerFunc) echo.HandlerFunc {
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

// Text is the metrics now in Prometheus' text format, and its media type.
func (m *Metrics) Text() (body []byte, contentType string, err error) {
	families, err := m.reg.Gather()
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	enc := expfmt.NewEncoder(&buf, format)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, "", err
		}
	}
	return buf.Bytes(), string(format), nil
}
