"""GitHub's REST API: the comment poster (``poster``), the read client's transport
(``client``), the plain values of its answers (``replies``), the ETag cache (``etags``),
the pacing policy (``backoff``), and the marker every posted comment carries
(``marker``, shared vocabulary: the domain reads it too).

Nothing is imported here, so reading ``marker`` loads no HTTP code.
"""
