# syntax=docker/dockerfile:1
FROM golang:1.26 AS build
ENV GOTOOLCHAIN=auto
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/matrixd ./cmd/matrixd \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/matrixd /usr/local/bin/matrixd
COPY --from=build --chown=nonroot:nonroot /out/data /data
VOLUME /data
ENV MATRIXD_ADDR=:8080 MATRIXD_DB=/data/matrixd.db
EXPOSE 8080
USER nonroot:nonroot
# The image has no shell or curl: the binary checks its own /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/matrixd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/matrixd"]
