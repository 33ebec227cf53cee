/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/evx.h
 * @brief The whole evx API: include this one header.
 *
 * evx is a small C ABI for CUDA events and streams: events created from a
 * device and recorded later on any stream, streams of its own or borrowed
 * from any framework, status codes that mirror `CUresult`, and opaque
 * handles that are checked on every call.
 */
#ifndef EVX_EVX_H
#define EVX_EVX_H

#include "evx/common.h"
#include "evx/status.h"
#include "evx/device.h"
#include "evx/event.h"
#include "evx/stream.h"
#include "evx/pool.h"
#include "evx/timing.h"
#include "evx/notify.h"
#include "evx/ipc.h"
#include "evx/capture.h"
#include "evx/lifetime.h"
#include "evx/fence.h"

#endif /* EVX_EVX_H */
