// SPDX-License-Identifier: BSD-3-Clause
// Copyright (c) 2026 The sluice authors
//
// nsqjs, unchanged, against sluice-nsqd: a Writer publishes (PUB and MPUB) to the
// gateway's TCP port, a Reader finds the gateway through the lookupd API only and
// consumes with maxInFlight 16 (RDY > 1): every message is touched, every tenth is
// requeued once and must come back with attempts 2, all are finished; every published
// message must arrive.
//   node nsqjs_e2e.js NODE_MODULES_DIR NSQD_TCP LOOKUPD_HTTP TOPIC COUNT
'use strict'
const path = require('path')
const [modDir, tcp, lookupd, topic, countArg] = process.argv.slice(2)
const nsq = require(path.join(modDir, 'nsqjs'))
const N = parseInt(countArg, 10)
const [host, port] = tcp.split(':')

function fail(msg) {
  console.error('nsqjs_e2e: FAIL: ' + msg)
  process.exit(1)
}
const guard = setTimeout(() => fail('not done in 120 s'), 120000) // upper bound only

const seen = new Set()
const requeued = new Set()
let redelivered = 0
let finished = 0

function startReader() {
  const r = new nsq.Reader(topic, 'nsqjs', {
    lookupdHTTPAddresses: lookupd,
    maxInFlight: 16,
    heartbeatInterval: 5,
  })
  r.on('error', (e) => fail('reader: ' + e))
  r.on('nsqd_connected', (h, p) => console.log(`reader connected to ${h}:${p} via lookupd`))
  r.on('message', (msg) => {
    const body = msg.body.toString()
    const n = parseInt(body.split(' ')[1], 10)
    msg.touch()
    if (n % 10 === 0 && !requeued.has(body)) {
      if (msg.attempts !== 1)
        fail(`first delivery of ${body} has attempts ${msg.attempts}`)
      requeued.add(body)
      msg.requeue(0, false)
      return
    }
    if (requeued.has(body)) {
      if (msg.attempts < 2)
        fail(`requeued ${body} came back with attempts ${msg.attempts}`)
      redelivered++
    }
    seen.add(body)
    msg.finish()
    finished++
    if (seen.size === N) {
      console.log(`nsqjs_e2e: ${N} messages consumed, ${redelivered} after REQ, ` +
        `${finished} finished`)
      clearTimeout(guard)
      r.close()
      setTimeout(() => process.exit(0), 100)
    }
  })
  r.connect()
}

const w = new nsq.Writer(host, parseInt(port, 10))
w.on('error', (e) => fail('writer: ' + e))
w.on('ready', () => {
  let acked = 0
  const done = (err) => {
    if (err) fail('publish: ' + err)
    if (++acked === 2) {
      console.log(`nsqjs_e2e: ${N} messages published (PUB and MPUB)`)
      w.close()
      startReader()
    }
  }
  // first half as single PUBs (one callback for the last), second half as one MPUB
  const half = Math.floor(N / 2)
  let pubs = 0
  for (let i = 0; i < half; i++) {
    w.publish(topic, `msg ${i}`, (err) => {
      if (err) fail('PUB: ' + err)
      if (++pubs === half) done()
    })
  }
  const batch = []
  for (let i = half; i < N; i++) batch.push(`msg ${i}`)
  w.publish(topic, batch, done)
})
w.connect()
