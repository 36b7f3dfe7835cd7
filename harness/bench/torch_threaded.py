# torch_small.py with a second thread made (and joined) first: the tracer's writer and
# compressor threads then run from the program's start, as in a program that has threads
# before it imports (a data loader's, a server's), instead of its single thread serving them.
import os
import threading

thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_small.py")) as f:
    exec(compile(f.read(), "torch_small.py", "exec"))
