// Package sample is `watermark-connect sample`: it puts sample records in a
// topic, creating the topic when it does not exist, so that a new user can
// try the kafka_watermark input on a real broker (the README's route from
// the demo to a pipeline of their own) without a Kafka tool of their own.
// It connects as the input does (status.Connect: -c, or --seed-brokers).
package sample
