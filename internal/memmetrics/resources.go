package memmetrics

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// exporterName is the metrics exporter Resources registers, once, on
// Benthos's global environment: its resource builder builds from there.
const exporterName = "memmetrics_store"

var (
	register sync.Once
	stores   sync.Map // id -> *Store
	nextID   atomic.Uint64
)

// Resources returns Benthos resources whose metrics report to a new Store,
// the Store, and the function that closes the resources. For tests that
// make a component's metrics by hand (a Benthos stream takes a Store as
// its metrics exporter directly). Safe for concurrent use.
func Resources() (*service.Resources, *Store, func(context.Context) error, error) {
	var regErr error
	register.Do(func() {
		regErr = service.RegisterMetricsExporter(exporterName, service.NewConfigSpec().Field(service.NewStringField("id")),
			func(pc *service.ParsedConfig, _ *service.Logger) (service.MetricsExporter, error) {
				id, err := pc.FieldString("id")
				if err != nil {
					return nil, err
				}
				s, ok := stores.Load(id)
				if !ok {
					return nil, fmt.Errorf("memmetrics: no store %q", id)
				}
				return s.(*Store), nil
			})
	})
	if regErr != nil {
		return nil, nil, nil, regErr
	}
	s := New()
	id := fmt.Sprint(nextID.Add(1))
	stores.Store(id, s)
	b := service.NewResourceBuilder()
	if err := b.SetMetricsYAML(fmt.Sprintf("%s: { id: %q }", exporterName, id)); err != nil {
		return nil, nil, nil, err
	}
	res, closeRes, err := b.Build()
	if err != nil {
		return nil, nil, nil, err
	}
	return res, s, func(ctx context.Context) error {
		stores.Delete(id)
		return closeRes(ctx)
	}, nil
}
