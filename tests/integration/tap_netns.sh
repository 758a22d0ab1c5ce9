#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
exit 77
