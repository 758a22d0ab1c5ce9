// SPDX-License-Identifier: BSD-3-Clause
// Copyright (c) 2026 The sluice authors
//
// nsqjs, unchanged, against sluice-nsqd in front of a topic whose partitions lead on
// different nodes (nsq_nsqjs_parts.sh). A Reader subscribes first (channel "parts",
// maxInFlight 64, every message FIN'd); once the gateway lists it, Writers publish
// "m000001".."mN", alternately as one MPUB of 32 and as 32 PUBs, at most 8 commands in
// flight. Each acknowledged number is appended to ACKED_FILE. A publish that fails
// (E_PUB_FAILED closes the connection, as nsqd's fatal errors do; or the connection is
// lost) is published again on a new Writer connection: NSQ's at-least-once. Ends once every
// message is acknowledged and every acknowledged message was consumed; prints the
// deliveries, the distinct messages and the duplicates (a message delivered more than
// once: allowed by NSQ's semantics, counted and listed). With STRICT=1 a duplicate, a
// failed publish or a message consumed that was never published fails the run.
// PACE_MS > 0: once half is acknowledged, one unit every PACE_MS (so that a failover the
// test starts then meets publishes in flight).
//   node nsqjs_parts.js NODE_MODULES_DIR NSQD_TCP NSQD_HTTP TOPIC N ACKED_FILE STRICT PACE_MS
'use strict'
const fs = require('fs')
const http = require('http')
const path = require('path')
const [modDir, tcp, httpAddr, topic, countArg, ackedFile, strictArg, paceArg] =
  process.argv.slice(2)
const PACE_MS = parseInt(paceArg || '0', 10)
const t0 = Date.now()
const secs = () => ((Date.now() - t0) / 1000).toFixed(1)
const nsq = require(path.join(modDir, 'nsqjs'))
const N = parseInt(countArg, 10)
const STRICT = strictArg === '1'
const CHUNK = 32
const WINDOW = 8
const [host, port] = tcp.split(':')

function fail(msg) {
  console.error('nsqjs_parts: FAIL: ' + msg)
  process.exit(1)
}
const guard = setTimeout(() => fail('not done in 300 s'), 300000) // upper bound only

const deliveries = new Map() // body -> deliveries
let delivered = 0
let dupsSeen = 0
const acked = new Set()
let failedPubs = 0
let writers = 0

function check() {
  if (acked.size < N) return
  for (const n of acked) if (!deliveries.has(`m${String(n).padStart(6, '0')}`)) return
  const dups = [...deliveries].filter(([, k]) => k > 1)
  const extra = [...deliveries.keys()].filter((b) => !acked.has(parseInt(b.slice(1), 10)))
  console.log(`nsqjs_parts: ${secs()} s: ${N} published and acknowledged ` +
    `(${failedPubs} publishes ` +
    `failed and were sent again, ${writers} Writer connections); ${delivered} deliveries ` +
    `of ${deliveries.size} distinct messages, all FIN'd; duplicates: ${dups.length}` +
    (dups.length ? ' e.g. ' + dups.slice(0, 5).map(([b, k]) => `${b} x${k}`).join(', ')
      : ''))
  if (STRICT && (dups.length || failedPubs || extra.length))
    fail(`not exactly once: ${dups.length} duplicates, ${failedPubs} failed publishes, ` +
      `${extra.length} unknown messages`)
  clearTimeout(guard)
  setTimeout(() => process.exit(0), 100)
}

const reader = new nsq.Reader(topic, 'parts', {
  nsqdTCPAddresses: [tcp],
  maxInFlight: 64,
  heartbeatInterval: 5,
})
reader.on('error', (e) => console.log('nsqjs_parts: reader error (nsqjs reconnects): ' + e))
reader.on('message', (msg) => {
  const body = msg.body.toString()
  deliveries.set(body, (deliveries.get(body) || 0) + 1)
  if (deliveries.get(body) === 2 && ++dupsSeen === 1)
    console.log(`nsqjs_parts: ${secs()} s: first duplicate delivery (${body})`)
  delivered++
  msg.finish()
  check()
})
reader.connect()
const progress = setInterval(() => console.log(`nsqjs_parts: ${secs()} s: ${acked.size} ` +
  `acknowledged, ${deliveries.size} distinct consumed, ${delivered} deliveries`), 5000)
progress.unref()

// the Reader's SUB is in place (the gateway lists the client) before the first publish:
// a new channel starts at the messages published after it
function waitSubscribed(then) {
  http.get(`http://${httpAddr}/stats?format=json&topic=${topic}`, (res) => {
    let s = ''
    res.on('data', (d) => { s += d })
    res.on('end', () => {
      if (s.includes('"client_count":1')) then()
      else setTimeout(() => waitSubscribed(then), 100)
    })
  }).on('error', () => setTimeout(() => waitSubscribed(then), 100))
}

// publishing: units of CHUNK numbers, even units as one MPUB, odd ones as CHUNK PUBs
const todo = []
for (let u = 0; u * CHUNK < N; u++) todo.push(u)
let w = null
let inflight = 0
let paceTimer = null

function unitNumbers(u) {
  const a = []
  for (let n = u * CHUNK + 1; n <= Math.min(N, (u + 1) * CHUNK); n++) a.push(n)
  return a
}
const body = (n) => `m${String(n).padStart(6, '0')}`

function ackNumbers(nums) {
  const fresh = nums.filter((n) => !acked.has(n))
  fresh.forEach((n) => acked.add(n))
  if (fresh.length && acked.size === N)
    console.log(`nsqjs_parts: ${secs()} s: all ${N} acknowledged`)
  if (fresh.length) fs.appendFileSync(ackedFile, fresh.join('\n') + '\n')
}

function pump() {
  while (w !== null && w.ready && inflight < WINDOW && todo.length > 0) {
    if (PACE_MS > 0 && acked.size >= N / 2) {
      if (paceTimer !== null) return
      paceTimer = setTimeout(() => { paceTimer = null; pump() }, PACE_MS)
    }
    const u = todo.shift()
    const nums = unitNumbers(u).filter((n) => !acked.has(n))
    if (nums.length === 0) continue
    const mine = w
    if (u % 2 === 0) {
      inflight++
      mine.publish(topic, nums.map(body), (err) => {
        inflight--
        if (err) { failedPubs++; todo.unshift(u) } else ackNumbers(nums)
        if (err) renew(mine); else pump()
        check()
      })
    } else {
      let left = nums.length, bad = false
      inflight++
      for (const n of nums) {
        mine.publish(topic, body(n), (err) => {
          if (err) { failedPubs++; bad = true } else ackNumbers([n])
          if (--left > 0) return
          inflight--
          if (bad) { todo.unshift(u); renew(mine) } else pump()
          check()
        })
      }
    }
  }
}

// a new Writer connection after a failure (once per failed one)
function renew(old) {
  if (w !== old) return
  w = null
  // not from inside nsqjs's error handling (it goes on using the connection after the
  // callbacks)
  setImmediate(() => {
    try { old.close() } catch (e) { /* already closed */ }
  })
  setTimeout(connectWriter, 200)
}

function connectWriter() {
  const mine = new nsq.Writer(host, parseInt(port, 10))
  writers++
  w = mine
  mine.on('ready', pump)
  mine.on('error', (e) => {
    console.log('nsqjs_parts: writer error (publishing again): ' + e)
    renew(mine)
  })
  mine.on('closed', () => renew(mine))
  mine.connect()
}

waitSubscribed(() => {
  console.log('nsqjs_parts: reader subscribed; publishing ' + N)
  connectWriter()
})
