/* SPDX-License-Identifier: BSD-3-Clause */
int main(void);
int main(void) { return 0; }
