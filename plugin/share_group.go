package plugin

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/share"
)

// setupShareGroup prepares the group before any member joins: it sets the
// group's share.auto.offset.reset when start_offset asks (kgo reads
// existing records of a share group only with it set: kgo.ShareGroup's
// doc, kgo config.go:2008-2025), then reads the group's limits. cl is a
// client in no group. kadm v1.20.0 has no call for GROUP config resources,
// hence the raw requests.
func setupShareGroup(ctx context.Context, cl *kgo.Client, conf *shareConfig) (share.Limits, error) {
	if conf.startOffset != "" {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		res.ResourceName = conf.group
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = share.GroupAutoReset, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(conf.startOffset)
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Resources) != 1 {
			err = fmt.Errorf("the broker answered for %d resources, want 1", len(resp.Resources))
		}
		if err == nil {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		if err != nil {
			return share.Limits{}, fmt.Errorf("%s (%s): setting the share group %q's %s (needs the ALTER_CONFIGS operation on the group where ACLs are on): %w",
				fieldStartOffset, conf.startOffset, conf.group, share.GroupAutoReset, err)
		}
	}

	return ShareGroupLimits(ctx, cl, conf.group)
}

// ShareGroupLimits reads a share group's delivery count limit and record
// lock duration as the brokers describe them: the group's own configs, else
// a broker's defaults, else Kafka's (share.ParseLimits). It changes nothing;
// `watermark-connect status --share-group` reads them with it. It needs the
// DESCRIBE_CONFIGS operation on the group where ACLs are on.
func ShareGroupLimits(ctx context.Context, cl *kgo.Client, groupName string) (share.Limits, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	group := kmsg.NewDescribeConfigsRequestResource()
	group.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	group.ResourceName = groupName
	group.ConfigNames = []string{share.GroupDeliveryLimit, share.GroupLockDuration}
	req.Resources = append(req.Resources, group)
	// A broker's defaults, for a group config described without a value
	// (kfake describes an unset group config with a null value, and applies
	// only the broker's: kfake data.go:1165-1171). A numeric name routes the
	// request to that broker (kgo client.go:4898-4918).
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return share.Limits{}, fmt.Errorf("reading the cluster's brokers: %w", err)
	}
	if len(meta.Brokers) > 0 {
		broker := kmsg.NewDescribeConfigsRequestResource()
		broker.ResourceType = kmsg.ConfigResourceTypeBroker
		broker.ResourceName = strconv.Itoa(int(meta.Brokers[0].NodeID))
		broker.ConfigNames = []string{share.BrokerDeliveryLimit, share.BrokerLockDuration}
		req.Resources = append(req.Resources, broker)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return share.Limits{}, fmt.Errorf("describing the share group %q's configs: %w", groupName, err)
	}
	values := map[kmsg.ConfigResourceType]map[string]*string{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ResourceType == kmsg.ConfigResourceTypeBroker {
				continue // the group's values, or Kafka's defaults, serve
			}
			return share.Limits{}, fmt.Errorf("describing the share group %q's configs (needs the DESCRIBE_CONFIGS operation on the group where ACLs are on): %w", groupName, err)
		}
		m := map[string]*string{}
		for _, c := range r.Configs {
			m[c.Name] = c.Value
		}
		values[r.ResourceType] = m
	}
	l, err := share.ParseLimits(values[kmsg.ConfigResourceTypeGroupConfig], values[kmsg.ConfigResourceTypeBroker])
	if err != nil {
		return share.Limits{}, fmt.Errorf("share group %q: %w", groupName, err)
	}
	return l, nil
}

// maxAttemptsFor is the attempt at which a failed record is no longer
// released: dead_letter.max_attempts, or the group's delivery limit. More
// than the limit is an error naming both: the broker would archive a
// record released at its limit, which the input would never have said.
func maxAttemptsFor(conf *shareConfig, l share.Limits) (int32, error) {
	if conf.maxAttempts == 0 {
		return l.DeliveryLimit, nil
	}
	if conf.maxAttempts > int(l.DeliveryLimit) {
		return 0, fmt.Errorf("%s.%s (%d) must be at most the share group %q's delivery count limit (%d): the broker archives a record released at its limit",
			fieldDeadLetter, fieldDeadLetterMaxAttempts, conf.maxAttempts, conf.group, l.DeliveryLimit)
	}
	return int32(conf.maxAttempts), nil
}
